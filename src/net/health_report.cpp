#include "net/health_report.hpp"

#include <unistd.h>

#include <cstdio>

#include "api/json_writer.hpp"

namespace pagedserve::net {
namespace {

// Resident set size of this process, from /proc (0 where unavailable).
std::uint64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long pages_total = 0, pages_resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &pages_total, &pages_resident);
  std::fclose(f);
  return n == 2 ? pages_resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace

std::string health_body(std::string_view model_name, const engine_status& s, bool draining, std::string_view replica) {
  std::string out = draining ? R"({"status":"draining","replica":)" : R"({"status":"ok","replica":)";
  json_append_string(out, replica);
  out += R"(,"model":)";
  json_append_string(out, model_name);
  out += R"(,"running":)" + std::to_string(s.scheduler.running) + R"(,"waiting":)" +
         std::to_string(s.scheduler.waiting) + R"(,"kv_blocks_total":)" + std::to_string(s.kv.blocks_total) +
         R"(,"kv_blocks_free":)" + std::to_string(s.kv.blocks_free) + R"(,"kv_block_size":)" +
         std::to_string(s.kv.block_size) + R"(,"kv_sequences":)" + std::to_string(s.kv.sequences) +
         R"(,"kv_blocks_cached":)" + std::to_string(s.kv.blocks_cached) + R"(,"prefix_cache_queries":)" +
         std::to_string(s.kv.prefix_cache_queries) + R"(,"prefix_cache_hits":)" + std::to_string(s.kv.prefix_cache_hits) +
         R"(,"kv_forks":)" + std::to_string(s.kv.forks) + R"(,"kv_block_copies":)" + std::to_string(s.kv.block_copies) +
         R"(,"executor_busy_seconds":)" + std::to_string(s.executor.busy_seconds) +
         R"(,"executor_gap_seconds":)" + std::to_string(s.executor.gap_seconds) +
         R"(,"preemptions":)" + std::to_string(s.scheduler.preemptions) + R"(,"steps":)" +
         std::to_string(s.scheduler.steps) + R"(,"rss_bytes":)" + std::to_string(resident_bytes()) +
         R"(,"version":")" PAGEDSERVE_VERSION R"("})";
  return out;
}

std::string loading_health_body(std::string_view replica) {
  std::string body = R"({"status":"loading","replica":)";
  json_append_string(body, replica);
  body += R"(,"version":")" PAGEDSERVE_VERSION R"("})";
  return body;
}

engine_gauges gauges_of(const engine_status& s) {
  engine_gauges g;
  g.running = s.scheduler.running;
  g.waiting = s.scheduler.waiting;
  g.kv_cache_usage =
      s.kv.blocks_total > 0 ? static_cast<double>(s.kv.blocks_total - s.kv.blocks_free) / s.kv.blocks_total : 0.0;
  g.preemptions = s.scheduler.preemptions;
  g.steps = s.scheduler.steps;
  g.prefix_cache_queries = s.kv.prefix_cache_queries;
  g.prefix_cache_hits = s.kv.prefix_cache_hits;
  g.executor_busy_seconds = s.executor.busy_seconds;
  g.executor_gap_seconds = s.executor.gap_seconds;
  return g;
}

}  // namespace pagedserve::net
