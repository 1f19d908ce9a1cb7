// The serving metrics, named and meant as vLLM's (V1) under the prefix "pagedserve:".
#include "metrics/metrics.hpp"

namespace pagedserve {
namespace {

std::vector<double> with_prefix(std::vector<double> fine, std::initializer_list<double> vllm) {
  fine.insert(fine.end(), vllm);
  return fine;
}

// vLLM's "finished_reason" label values: stop, length, abort.
std::string_view finished_label(finish_reason r) {
  switch (r) {
    case finish_reason::stop: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::cancelled: return "abort";
    case finish_reason::error: return "error";
  }
  return "error";
}

}  // namespace

std::vector<double> metrics_ttft_buckets() {
  return with_prefix({0.0001, 0.00025, 0.0005}, {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                                                 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0});
}

std::vector<double> metrics_itl_buckets() {
  return with_prefix({0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005},
                     {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
                      40.0, 80.0});
}

std::vector<double> metrics_request_latency_buckets() {
  return with_prefix({0.01, 0.025, 0.05, 0.1}, {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
                                                50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0});
}

std::vector<double> metrics_token_count_buckets(int max_tokens) {
  std::vector<double> out;
  for (double decade = 1;; decade *= 10)
    for (const double m : {1.0, 2.0, 5.0}) {
      if (m * decade > max_tokens) return out;
      out.push_back(m * decade);
    }
}

serving_metrics::serving_metrics(int max_model_len)
    : running_(registry_.gauge("pagedserve:num_requests_running", "Number of requests in the current engine batch.")),
      waiting_(registry_.gauge("pagedserve:num_requests_waiting", "Number of requests waiting to be scheduled.")),
      kv_usage_(registry_.gauge("pagedserve:kv_cache_usage_perc", "Fraction of KV-cache blocks in use (0 to 1).")),
      preemptions_(registry_.counter("pagedserve:num_preemptions_total", "Cumulative number of preemptions.")),
      prefix_queries_(registry_.counter("pagedserve:prefix_cache_queries_total",
                                        "Prefix-cache lookups, in prompt tokens.")),
      prefix_hits_(registry_.counter("pagedserve:prefix_cache_hits_total",
                                     "Prefix-cache hits, in prompt tokens found cached.")),
      prompt_tokens_(registry_.counter("pagedserve:prompt_tokens_total", "Number of prefill tokens processed.")),
      generation_tokens_(registry_.counter("pagedserve:generation_tokens_total",
                                           "Number of generation tokens processed.")),
      steps_(registry_.counter("pagedserve:engine_steps_total", "Engine steps (forward passes) run.")),
      executor_busy_(registry_.counter("pagedserve:executor_busy_seconds_total",
                                       "Time the executor spent computing steps, in seconds.")),
      executor_gap_(registry_.counter("pagedserve:executor_gap_seconds_total",
                                      "Time the executor waited between back-to-back steps, in seconds.")),
      ttft_(registry_.histogram("pagedserve:time_to_first_token_seconds",
                                "Time from request arrival to its first token, in seconds.", metrics_ttft_buckets())),
      itl_(registry_.histogram("pagedserve:inter_token_latency_seconds",
                               "Time between consecutive output tokens of a request, in seconds.",
                               metrics_itl_buckets())),
      e2e_(registry_.histogram("pagedserve:e2e_request_latency_seconds",
                               "Time from request arrival to its last token, in seconds.",
                               metrics_request_latency_buckets())),
      tpot_(registry_.histogram("pagedserve:request_time_per_output_token_seconds",
                                "Mean time per output token after the first, per request, in seconds.",
                                metrics_itl_buckets())),
      queue_(registry_.histogram("pagedserve:request_queue_time_seconds",
                                 "Time from request arrival to its first scheduled step, in seconds.",
                                 metrics_request_latency_buckets())),
      request_prompt_tokens_(registry_.histogram("pagedserve:request_prompt_tokens",
                                                 "Number of prefill tokens per finished request.",
                                                 metrics_token_count_buckets(max_model_len))),
      request_generation_tokens_(registry_.histogram("pagedserve:request_generation_tokens",
                                                     "Number of generation tokens per finished request.",
                                                     metrics_token_count_buckets(max_model_len))),
      spec_drafts_(registry_.counter("pagedserve:spec_decode_num_drafts_total",
                                     "Speculative decoding: proposal runs verified (one per sequence and step).")),
      spec_draft_tokens_(registry_.counter("pagedserve:spec_decode_num_draft_tokens_total",
                                           "Speculative decoding: proposed tokens verified.")),
      spec_accepted_tokens_(registry_.counter("pagedserve:spec_decode_num_accepted_tokens_total",
                                              "Speculative decoding: proposed tokens accepted.")) {
  registry_.counter("pagedserve:spec_decode_num_accepted_tokens_per_pos_total",
                    "Speculative decoding: proposed tokens accepted, by position in the proposal run.", "position", "0");
  // Every finish reason and the admission refusal show as 0 before the first request.
  for (const char* reason : {"stop", "length", "abort"})
    registry_.counter("pagedserve:request_success_total", "Finished requests, by finish reason.", "finished_reason",
                      reason);
  registry_.counter("pagedserve:request_failure_total", "Requests that ended with an error, by error code.", "code",
                    "queue_full");
}

void serving_metrics::on_scheduled(seconds queued) { queue_.observe(queued.count()); }

void serving_metrics::on_first_token(int n_prompt, seconds ttft) {
  prompt_tokens_.add(n_prompt);
  ttft_.observe(ttft.count());
}

void serving_metrics::on_tokens(int n, std::optional<seconds> gap) {
  generation_tokens_.add(n);
  if (gap) itl_.observe(gap->count());
}

void serving_metrics::on_finished(finish_reason reason, const usage& used, seconds e2e, std::optional<seconds> decode) {
  registry_.counter_with("pagedserve:request_success_total", finished_label(reason)).add();
  e2e_.observe(e2e.count());
  request_prompt_tokens_.observe(used.prompt_tokens);
  request_generation_tokens_.observe(used.completion_tokens);
  if (decode && used.completion_tokens > 1) tpot_.observe(decode->count() / (used.completion_tokens - 1));
}

void serving_metrics::on_spec_decode(int n_proposed, int n_accepted) {
  spec_drafts_.add();
  spec_draft_tokens_.add(n_proposed);
  spec_accepted_tokens_.add(n_accepted);
  for (int position = 0; position < n_accepted; ++position)
    registry_.counter_with("pagedserve:spec_decode_num_accepted_tokens_per_pos_total", std::to_string(position)).add();
}

void serving_metrics::on_failed(std::string_view code) {
  registry_.counter_with("pagedserve:request_failure_total", code).add();
}

std::string serving_metrics::render(const engine_gauges& g, std::string_view model_name, std::string_view replica) {
  std::lock_guard lock(render_mu_);
  running_.set(g.running);
  waiting_.set(g.waiting);
  kv_usage_.set(g.kv_cache_usage);
  preemptions_.store(static_cast<double>(g.preemptions));
  steps_.store(static_cast<double>(g.steps));
  prefix_queries_.store(static_cast<double>(g.prefix_cache_queries));
  prefix_hits_.store(static_cast<double>(g.prefix_cache_hits));
  executor_busy_.store(g.executor_busy_seconds);
  executor_gap_.store(g.executor_gap_seconds);
  std::string labels = "model_name=\"" + metrics_escape_label(model_name) + "\"";
  if (!replica.empty()) labels += ",replica=\"" + metrics_escape_label(replica) + "\"";
  return registry_.render(labels);
}

}  // namespace pagedserve
