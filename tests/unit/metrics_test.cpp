// The metrics registry: Prometheus text exposition, histogram buckets, and counters that stay
// exact under concurrent updates.
#include <gtest/gtest.h>

#include <charconv>
#include <thread>

#include "metrics/metrics.hpp"

namespace pagedserve {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.starts_with(line + "\n");
}

TEST(metrics, counters_gauges_and_labels_render) {
  metrics_registry r;
  r.counter("x:requests_total", "Requests.").add(3);
  r.counter("x:done_total", "Done.", "reason", "stop").add();
  r.counter_with("x:done_total", "len\"gth").add(2);
  r.gauge("x:waiting", "Waiting.").set(4);
  const std::string text = r.render("model_name=\"m\"");
  EXPECT_TRUE(has_line(text, "# HELP x:requests_total Requests.")) << text;
  EXPECT_TRUE(has_line(text, "# TYPE x:requests_total counter")) << text;
  EXPECT_TRUE(has_line(text, "x:requests_total{model_name=\"m\"} 3")) << text;
  EXPECT_TRUE(has_line(text, "x:done_total{model_name=\"m\",reason=\"stop\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "x:done_total{model_name=\"m\",reason=\"len\\\"gth\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "# TYPE x:waiting gauge")) << text;
  EXPECT_TRUE(has_line(text, "x:waiting{model_name=\"m\"} 4")) << text;
  EXPECT_TRUE(has_line(metrics_registry{}.render() + r.render(), "x:waiting 4")) << "no labels, no braces";
}

TEST(metrics, histogram_buckets_are_cumulative_and_inclusive) {
  metrics_registry r;
  metric_histogram& h = r.histogram("x:latency_seconds", "Latency.", {0.1, 1.0});
  h.observe(0.05);
  h.observe(0.1);  // "le" is inclusive
  h.observe(0.5);
  h.observe(7.0);
  const std::string text = r.render();
  EXPECT_TRUE(has_line(text, "# TYPE x:latency_seconds histogram")) << text;
  EXPECT_TRUE(has_line(text, "x:latency_seconds_bucket{le=\"0.1\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "x:latency_seconds_bucket{le=\"1\"} 3")) << text;
  EXPECT_TRUE(has_line(text, "x:latency_seconds_bucket{le=\"+Inf\"} 4")) << text;
  char sum[64];
  const auto [end, ec] = std::to_chars(sum, sum + sizeof sum, 0.05 + 0.1 + 0.5 + 7.0);
  EXPECT_TRUE(has_line(text, "x:latency_seconds_sum " + std::string(sum, end))) << text;
  EXPECT_TRUE(has_line(text, "x:latency_seconds_count 4")) << text;
}

TEST(metrics, concurrent_updates_are_exact) {
  metrics_registry r;
  metric_counter& c = r.counter("x:n_total", "N.");
  metric_histogram& h = r.histogram("x:h", "H.", {1.0});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.add();
        h.observe(0.5);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 40000);
  EXPECT_EQ(h.count(), 40000u);
  EXPECT_EQ(h.cumulative_counts().front(), 40000u);
}

TEST(metrics, serving_metrics_have_vllm_names) {
  serving_metrics m(512);
  m.on_first_token(5, serving_metrics::seconds(0.002));
  m.on_tokens(1, std::nullopt);
  m.on_tokens(1, serving_metrics::seconds(0.001));
  m.on_finished(finish_reason::length, {5, 2}, serving_metrics::seconds(0.01), serving_metrics::seconds(0.008));
  m.on_finished(finish_reason::cancelled, {5, 0}, serving_metrics::seconds(0.01), std::nullopt);
  m.on_failed("queue_full");
  const std::string text = m.render({1, 2, 0.25, 3, 40}, "tiny");
  for (const char* line :
       {"pagedserve:num_requests_running{model_name=\"tiny\"} 1", "pagedserve:num_requests_waiting{model_name=\"tiny\"} 2",
        "pagedserve:kv_cache_usage_perc{model_name=\"tiny\"} 0.25", "pagedserve:num_preemptions_total{model_name=\"tiny\"} 3",
        "pagedserve:prefix_cache_queries_total{model_name=\"tiny\"} 0",
        "pagedserve:prefix_cache_hits_total{model_name=\"tiny\"} 0",
        "pagedserve:prompt_tokens_total{model_name=\"tiny\"} 5", "pagedserve:generation_tokens_total{model_name=\"tiny\"} 2",
        "pagedserve:request_success_total{model_name=\"tiny\",finished_reason=\"length\"} 1",
        "pagedserve:request_success_total{model_name=\"tiny\",finished_reason=\"abort\"} 1",
        "pagedserve:request_success_total{model_name=\"tiny\",finished_reason=\"stop\"} 0",
        "pagedserve:request_failure_total{model_name=\"tiny\",code=\"queue_full\"} 1",
        "pagedserve:time_to_first_token_seconds_count{model_name=\"tiny\"} 1",
        "pagedserve:inter_token_latency_seconds_count{model_name=\"tiny\"} 1",
        "pagedserve:e2e_request_latency_seconds_count{model_name=\"tiny\"} 2",
        "pagedserve:request_time_per_output_token_seconds_count{model_name=\"tiny\"} 1"})
    EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
  EXPECT_EQ(metrics_token_count_buckets(512), (std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500}));
}

// Behind a load balancer each replica names itself: label replica on every series, histogram
// buckets included, after model_name.
TEST(metrics, the_replica_label_is_on_every_series) {
  serving_metrics m(512);
  m.on_first_token(5, serving_metrics::seconds(0.002));
  const std::string text = m.render({}, "tiny", "r\"1");
  int n_series = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    ++n_series;
    EXPECT_NE(line.find("{model_name=\"tiny\",replica=\"r\\\"1\""), std::string::npos) << line;
  }
  EXPECT_GT(n_series, 50);
  EXPECT_TRUE(has_line(text, "pagedserve:time_to_first_token_seconds_bucket{model_name=\"tiny\",replica=\"r\\\"1\",le=\"+Inf\"} 1"))
      << text;
}

}  // namespace
}  // namespace pagedserve
