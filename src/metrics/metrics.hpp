#pragma once
// Prometheus metrics: a small thread-safe registry (counters, gauges, histograms; a family may
// carry one label) rendered in the text exposition format, and serving_metrics, the set a vLLM
// user already graphs, with vLLM's meanings, under the prefix "pagedserve:".
//
// Why a registry of our own: the figures are few, updated from many strands (one per request
// actor) and read by GET /metrics; lock-free atomics for the hot updates and one mutex per labelled
// family are all that is needed, and no Prometheus client library is on the machine.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pagedserve/request.hpp"

namespace pagedserve {

// A monotonically increasing count (tokens, requests).
class metric_counter {
 public:
  void add(double v = 1.0) { value_.fetch_add(v, std::memory_order_relaxed); }
  // For totals kept elsewhere and read at scrape time (the scheduler's preemption count).
  void store(double total) { value_.store(total, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A value that goes up and down (queue lengths, cache usage); set when scraped.
class metric_gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Observations counted into cumulative buckets by upper bound (Prometheus "le"), plus their sum.
class metric_histogram {
 public:
  explicit metric_histogram(std::vector<double> upper_bounds);
  void observe(double v);
  const std::vector<double>& upper_bounds() const { return bounds_; }
  // Observations <= upper_bounds()[i] (cumulative); the last entry is +Inf, i.e. the count.
  std::vector<std::uint64_t> cumulative_counts() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }
  std::uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;                              // ascending, finite
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;   // per bucket (not cumulative), +1 for +Inf
  std::atomic<double> sum_{0.0};
  std::atomic<std::uint64_t> count_{0};
};

// Named metric families, rendered in registration order. Each family has one optional label key;
// series of a labelled family are created on first use (with) or up front (so they show as 0).
class metrics_registry {
 public:
  enum class kind { counter, gauge, histogram };

  metric_counter& counter(std::string name, std::string help, std::string label_key = {},
                          std::string label_value = {});
  metric_gauge& gauge(std::string name, std::string help);
  metric_histogram& histogram(std::string name, std::string help, std::vector<double> upper_bounds);
  // The series of a labelled counter family registered before with counter(name, ..., key, ...).
  metric_counter& counter_with(std::string_view name, std::string_view label_value);

  // Text exposition format 0.0.4; common_labels (e.g. model_name="x") go on every series.
  std::string render(std::string_view common_labels = {}) const;

 private:
  struct family {
    std::string name, help;
    kind type;
    std::string label_key;
    std::map<std::string, std::unique_ptr<metric_counter>> counters;  // by label value ("" unlabelled)
    std::unique_ptr<metric_gauge> gauge;
    std::unique_ptr<metric_histogram> histogram;
  };
  family* find(std::string_view name) const;

  mutable std::mutex mu_;                        // guards families_ and each family's counters map
  std::vector<std::unique_ptr<family>> families_;
};

// Buckets: vLLM's, with finer ones in front for a CPU serving tiny models in microseconds.
std::vector<double> metrics_ttft_buckets();          // seconds
std::vector<double> metrics_itl_buckets();           // seconds
std::vector<double> metrics_request_latency_buckets();  // seconds
std::vector<double> metrics_token_count_buckets(int max_tokens);  // 1, 2, 5, 10, 20, 50 ... up to max

// What the engine reports at scrape time (GET /metrics reads it through engine::report_status).
struct engine_gauges {
  int running = 0;                  // sequences in the current batch
  int waiting = 0;                  // queued sequences
  double kv_cache_usage = 0;        // fraction of KV blocks in use, 0..1
  std::uint64_t preemptions = 0;    // cumulative
  std::uint64_t steps = 0;          // engine steps so far
  std::uint64_t prefix_cache_queries = 0;  // cumulative prompt tokens looked up in the prefix cache
  std::uint64_t prefix_cache_hits = 0;     // of which found cached
  double executor_busy_seconds = 0;        // cumulative time computing steps
  double executor_gap_seconds = 0;         // cumulative idle time between back-to-back steps
};

// The serving metrics with vLLM's meanings, recorded by request actors (per-request timings) and
// the network edge (engine gauges at scrape time).
class serving_metrics {
 public:
  using seconds = std::chrono::duration<double>;
  explicit serving_metrics(int max_model_len = 512);

  // The request was scheduled for the first time, queued for that long after it arrived.
  void on_scheduled(seconds queued);
  // The prompt was prefilled and the first token sampled, ttft after the request arrived.
  void on_first_token(int n_prompt, seconds ttft);
  // n tokens were sampled for one request; gap since its previous tokens (none for the first).
  void on_tokens(int n, std::optional<seconds> gap);
  // A request ended normally (stop, length) or was cancelled (vLLM's "abort").
  void on_finished(finish_reason reason, const usage& used, seconds e2e, std::optional<seconds> decode);
  // Speculative decoding verified n_proposed proposals of one sequence in a step and accepted the
  // first n_accepted (vLLM's spec_decode_* counters; acceptance per position 0..n_accepted-1).
  void on_spec_decode(int n_proposed, int n_accepted);
  // A request ended with an error before or instead of generating (queue_full, invalid_max_tokens...).
  void on_failed(std::string_view code);

  // Renders everything with gauges from the engine; model_name, and replica when not empty, label
  // every series. The label is "replica", not "instance": Prometheus sets instance itself (the
  // scraped address) and would rename ours to exported_instance.
  std::string render(const engine_gauges& g, std::string_view model_name, std::string_view replica = {});
  metrics_registry& registry() { return registry_; }

 private:
  metrics_registry registry_;
  metric_gauge &running_, &waiting_, &kv_usage_;
  metric_counter &preemptions_, &prefix_queries_, &prefix_hits_, &prompt_tokens_, &generation_tokens_;
  metric_counter &steps_, &executor_busy_, &executor_gap_;
  metric_histogram &ttft_, &itl_, &e2e_, &tpot_, &queue_, &request_prompt_tokens_, &request_generation_tokens_;
  metric_counter &spec_drafts_, &spec_draft_tokens_, &spec_accepted_tokens_;
  std::mutex render_mu_;  // one scrape sets the scrape-time gauges and renders at a time
};

// Label value text as Prometheus wants it: backslash, double quote and newline escaped.
std::string metrics_escape_label(std::string_view v);

}  // namespace pagedserve
