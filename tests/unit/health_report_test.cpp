// /health and /metrics figures (net/health_report.hpp): the JSON bodies and the scrape-time gauges.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "src/net/health_report.hpp"

namespace pagedserve::net {
namespace {

TEST(health_report, loading_body) {
  EXPECT_EQ(loading_health_body("host:1"), R"({"status":"loading","replica":"host:1","version":")" PAGEDSERVE_VERSION
                                           R"("})");
}

TEST(health_report, body_carries_the_figures_and_escapes_names) {
  engine_status s;
  s.scheduler = {3, 4, 5, 6};
  s.kv.blocks_total = 100;
  s.kv.blocks_free = 75;
  s.kv.prefix_cache_hits = 9;
  for (const bool draining : {false, true}) {
    const std::string body = health_body("m\"odel", s, draining, "r\\1");
    simdjson::dom::parser parser;
    simdjson::dom::element e = parser.parse(body);
    EXPECT_EQ(std::string_view(e["status"]), draining ? "draining" : "ok");
    EXPECT_EQ(std::string_view(e["model"]), "m\"odel");
    EXPECT_EQ(std::string_view(e["replica"]), "r\\1");
    EXPECT_EQ(int64_t(e["running"]), 3);
    EXPECT_EQ(int64_t(e["waiting"]), 4);
    EXPECT_EQ(int64_t(e["kv_blocks_free"]), 75);
    EXPECT_EQ(int64_t(e["prefix_cache_hits"]), 9);
    EXPECT_EQ(int64_t(e["preemptions"]), 5);
  }
}

TEST(health_report, gauges_from_the_figures) {
  engine_status s;
  s.scheduler = {2, 1, 7, 40};
  s.kv.blocks_total = 200;
  s.kv.blocks_free = 150;
  s.executor.busy_seconds = 1.5;
  const engine_gauges g = gauges_of(s);
  EXPECT_EQ(g.running, 2);
  EXPECT_EQ(g.waiting, 1);
  EXPECT_EQ(g.preemptions, 7u);
  EXPECT_EQ(g.steps, 40u);
  EXPECT_DOUBLE_EQ(g.kv_cache_usage, 0.25);
  EXPECT_DOUBLE_EQ(g.executor_busy_seconds, 1.5);
  EXPECT_DOUBLE_EQ(gauges_of(engine_status{}).kv_cache_usage, 0.0);
}

}  // namespace
}  // namespace pagedserve::net
