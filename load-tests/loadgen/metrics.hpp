#pragma once
// The numbers of a level, computed from its request records as vllm bench serve computes them
// (../shared/anchors/serving-conventions.md section 1).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "loadgen/options.hpp"
#include "loadgen/runner.hpp"

namespace pagedserve::loadgen {

// Mean, median, standard deviation and percentiles of one latency, in ms; all 0 with no samples.
struct latency_stats {
  double mean = 0, median = 0, std = 0, p90 = 0, p99 = 0;
  std::size_t n = 0;
};
// numpy.percentile's default (linear interpolation between closest ranks); sorted ascending.
double percentile(const std::vector<double>& sorted, double p);
latency_stats latency_stats_of(std::vector<double> samples);

// Per-request latencies derived from a record.
struct request_latency {
  double ttft_ms = 0;  // send -> first content chunk
  double e2el_ms = 0;  // send -> last content chunk
  double tpot_ms = 0;  // (e2el - ttft) / (output_tokens - 1); 0 with one output token or none
};
request_latency request_latency_of(const request_record& rec);

struct level_summary {
  int concurrency = 0;
  double rate = 0;
  int num_requests = 0;
  int completed = 0;
  int failed = 0;
  int cancelled = 0;     // soak only: cancelled on purpose
  int disconnected = 0;  // soak only: dropped on purpose
  std::map<std::string, int> errors;  // failed, by kind
  double duration_s = 0;
  long long total_input_tokens = 0;   // completed requests: server usage, else the planned count
  long long total_output_tokens = 0;  // completed requests: server usage, else tokens seen
  double request_throughput = 0;      // completed / duration
  double output_throughput = 0;       // output tokens / duration
  double total_token_throughput = 0;  // (input + output tokens) / duration
  bool has_goodput = false;
  int good_completed = 0;             // completed requests meeting every SLO
  double request_goodput = 0;         // good_completed / duration
  int max_concurrency_seen = 0;       // most requests in flight at once
  latency_stats ttft, tpot, itl, e2el;
  double client_cpu_s = 0;            // loadgen's own CPU during the level
  double loadavg_start = 0, loadavg_end = 0;  // host 1-minute load average around the level
  std::string error;                  // the level could not run
};

level_summary level_summarize(const level_result& level, const slo_spec& slo);

// A long level (the soak) cut into consecutive intervals of `width` from level.start, each request
// counted in the interval it ended in (one still pending: the last), and each interval summarised
// as a level of its own, its duration the interval's (the last may be shorter): latency
// percentiles, errors and throughput over time.
struct level_interval {
  double start_s = 0, end_s = 0;  // from level.start
  level_summary summary;
};
std::vector<level_interval> level_intervals(const level_result& level, clock_type::duration width, const slo_spec& slo);

// Flat name -> value view of a summary's numbers, with vllm bench serve's names
// (mean_ttft_ms, p99_itl_ms, output_throughput, ...): what JSON, tables, plots and --compare use.
std::vector<std::pair<std::string, double>> level_summary_fields(const level_summary& s);

}  // namespace pagedserve::loadgen
