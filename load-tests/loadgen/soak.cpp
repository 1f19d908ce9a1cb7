// Soak mode (soak.hpp).
#include "loadgen/soak.hpp"

#include <cstdio>
#include <deque>
#include <thread>

#include "loadgen/health.hpp"
#include "loadgen/json_writer.hpp"
#include "loadgen/metrics.hpp"
#include "loadgen/report.hpp"
#include "loadgen/runner.hpp"

namespace pagedserve::loadgen {

namespace {

using namespace std::chrono_literals;

struct soak_check {
  std::string name;
  bool ok = false;
  std::string detail;
};

// Draws the next soak request: lengths from the options, and maybe a cancel or a disconnect.
struct soak_plan {
  const options& o;
  const prompt_builder& prompts;
  std::mt19937_64 rng;
  int next_index = 0;

  std::expected<std::pair<request_spec, request_record>, std::string> next() {
    const int n_prompt = o.prompt_tokens.sample(rng), n_out = o.max_tokens.sample(rng);
    auto spec = prompts.build(next_index++, n_prompt);
    if (!spec) return std::unexpected(spec.error());
    spec->max_tokens = n_out;
    request_record rec = record_for(*spec);
    // Act at a random moment of the request's expected life (queued, prefilling or decoding),
    // estimated from the latencies seen so far.
    const double u = unit(), after = 1.2 * typical_e2el_s * unit();
    if (u < o.cancel_fraction) rec.action = request_action::cancel;
    else if (u < o.cancel_fraction + o.disconnect_fraction) rec.action = request_action::disconnect;
    rec.action_after_s = after;
    return std::pair{std::move(*spec), std::move(rec)};
  }
  double unit() { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
  // A moving average of completed requests' end-to-end latency, in seconds.
  void observe(const request_record& rec) {
    if (rec.outcome != request_outcome::completed) return;
    const double e2el = std::chrono::duration<double>(rec.ended - rec.sent).count();
    typical_e2el_s = 0.9 * typical_e2el_s + 0.1 * e2el;
  }
  double typical_e2el_s = 0.5;
};

// Polls /health until nothing runs or waits and every KV block is free (or 15 s pass).
std::expected<health_status, std::string> health_at_rest(const target_spec& t) {
  const auto deadline = clock_type::now() + 15s;
  std::expected<health_status, std::string> h = std::unexpected("not asked");
  for (;;) {
    h = health_get(t, 2s);
    const bool rest = h && h->number("running").value_or(0) == 0 && h->number("waiting").value_or(0) == 0 &&
                      h->number("kv_blocks_free") == h->number("kv_blocks_total");
    if (rest || clock_type::now() > deadline) return h;
    std::this_thread::sleep_for(100ms);
  }
}

std::vector<soak_check> soak_checks(const options& o, const level_summary& s, const health_status& after,
                                    std::optional<double> rss_baseline) {
  std::vector<soak_check> checks;
  std::string errors;
  for (const auto& [kind, n] : s.errors) errors += (errors.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
  checks.push_back({"every request answered", s.failed == 0,
                    std::to_string(s.completed) + " completed, " + std::to_string(s.cancelled) + " cancelled, " +
                        std::to_string(s.disconnected) + " disconnected, " + std::to_string(s.failed) + " failed" +
                        (errors.empty() ? "" : " (" + errors + ")")});
  const auto running = after.number("running"), waiting = after.number("waiting");
  if (running && waiting)
    checks.push_back({"nothing running or waiting", *running == 0 && *waiting == 0,
                      "running " + std::to_string(static_cast<long long>(*running)) + ", waiting " +
                          std::to_string(static_cast<long long>(*waiting))});
  const auto total = after.number("kv_blocks_total"), free = after.number("kv_blocks_free");
  if (total && free)
    checks.push_back({"every KV block free", *total == *free,
                      std::to_string(static_cast<long long>(*free)) + " of " + std::to_string(static_cast<long long>(*total)) + " free"});
  const auto rss = after.number("rss_bytes");
  if (rss && rss_baseline) {
    const double growth_mb = (*rss - *rss_baseline) / (1024.0 * 1024.0);
    char detail[128];
    std::snprintf(detail, sizeof detail, "%.1f MiB after warm-up -> %.1f MiB at the end: %+.1f MiB (bound %.0f MiB)",
                  *rss_baseline / 1048576.0, *rss / 1048576.0, growth_mb, o.rss_bound_mb);
    checks.push_back({"resident memory bounded", growth_mb <= o.rss_bound_mb, detail});
  }
  if (checks.size() == 1) checks.push_back({"/health reports engine state", false, "no running/waiting/kv_blocks fields in: " + after.body});
  return checks;
}

// The soak over time: one row per interval, requests counted where they ended, /health at its end.
template <class HealthOf>
void intervals_print(const std::vector<level_interval>& intervals, HealthOf health_of) {
  std::printf("%9s %9s %6s %9s %7s %12s %12s %12s %10s %8s %8s %8s %8s  %s\n", "from s", "completed", "failed",
              "cancelled", "dropped", "p99 TTFT ms", "p99 ITL ms", "p99 E2EL ms", "out tok/s", "RSS MiB", "KV free",
              "running", "waiting", "errors");
  for (std::size_t i = 0; i < intervals.size(); ++i) {
    const auto& s = intervals[i].summary;
    std::string errors;
    for (const auto& [kind, n] : s.errors) errors += (errors.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
    const health_status* h = health_of(i);
    auto num = [&](const char* key, double scale) { return h ? h->number(key).value_or(-1) / scale : -1.0; };
    std::printf("%9.0f %9d %6d %9d %7d %12.1f %12.1f %12.1f %10.1f %8.1f %8.0f %8.0f %8.0f  %s\n",
                intervals[i].start_s, s.completed, s.failed, s.cancelled, s.disconnected, s.ttft.p99, s.itl.p99,
                s.e2el.p99, s.output_throughput, num("rss_bytes", 1048576.0), num("kv_blocks_free", 1),
                num("running", 1), num("waiting", 1), errors.c_str());
  }
}

}  // namespace

int soak_run(const options& o, const prompt_builder& prompts) {
  const auto before = health_get(o.target, 5s);
  if (!before) {
    std::fprintf(stderr, "loadgen: soak needs GET /health on the target: %s\n", before.error().c_str());
    return 1;
  }
  const int concurrency = o.concurrency.front();
  runner r(o);
  if (auto error = r.open(o.connections > 0 ? o.connections : concurrency); !error.empty()) {
    std::fprintf(stderr, "loadgen: %s\n", error.c_str());
    return 1;
  }
  soak_plan plan{o, prompts, std::mt19937_64(o.seed * 1000003u + 7777u)};
  level_result level;
  level.concurrency = concurrency;
  std::deque<request_record> records;  // stable addresses while requests run
  std::deque<request_spec> specs;
  const auto duration = std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o.soak_minutes * 60));
  const auto warm_up = std::min<clock_type::duration>(30s, duration / 10);
  std::string plan_error;
  level.start = clock_type::now();
  const auto stop_at = level.start + duration;
  auto launch_next = [&] {
    if (clock_type::now() >= stop_at || !plan_error.empty()) return;
    auto next = plan.next();
    if (!next) {
      plan_error = next.error();
      return;
    }
    specs.push_back(std::move(next->first));
    records.push_back(std::move(next->second));
    r.launch(records.back(), specs.back());
  };
  r.on_end([&](request_record& rec) {
    plan.observe(rec);
    launch_next();
  });
  for (int i = 0; i < concurrency; ++i) launch_next();
  std::optional<double> rss_baseline;
  // GET /health at the end of every report interval while the load runs: sample k at (k + 1) widths.
  const auto interval = std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o.soak_interval_s));
  std::vector<std::optional<health_status>> samples;
  const auto drain_deadline = stop_at + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(
                                            std::min(o.timeout_s, o.level_timeout_s) + 5));
  std::printf("soak: %.3g min at concurrency %d, %.0f%% cancelled, %.0f%% disconnected\n", o.soak_minutes, concurrency,
              100 * o.cancel_fraction, 100 * o.disconnect_fraction);
  while (r.in_flight() > 0 || (clock_type::now() < stop_at && plan_error.empty())) {
    r.poll(20ms);
    if (!rss_baseline && clock_type::now() >= level.start + warm_up) {
      if (auto h = health_get(o.target, 2s)) rss_baseline = h->number("rss_bytes");
      else rss_baseline = std::nullopt;
    }
    if (clock_type::now() >= level.start + static_cast<long>(samples.size() + 1) * interval) {
      auto h = health_get(o.target, 2s);
      samples.push_back(h ? std::optional<health_status>(std::move(*h)) : std::nullopt);
    }
    if (r.in_flight() == 0 && clock_type::now() < stop_at) launch_next();  // all dropped at once: start again
    if (clock_type::now() > drain_deadline) {
      r.abort_all("soak_drain_timeout");
      break;
    }
  }
  r.close();
  if (!plan_error.empty()) std::fprintf(stderr, "loadgen: soak stopped early: %s\n", plan_error.c_str());
  for (auto& rec : records) {
    level.end = std::max(level.end, rec.ended);
    level.records.push_back(std::move(rec));
  }
  level.duration_s = std::chrono::duration<double>(level.end - level.start).count();
  const level_summary s = level_summarize(level, o.goodput);
  const auto after = health_at_rest(o.target);
  if (!after) {
    std::fprintf(stderr, "loadgen: GET /health after the soak failed: %s\n", after.error().c_str());
    return 3;
  }
  const auto checks = soak_checks(o, s, *after, rss_baseline);
  table_header(stdout, "concurrency");
  table_row(stdout, s);
  const auto intervals = level_intervals(level, interval, o.goodput);
  // Interval i's state: the sample taken at its end, or (the drain's tail) the state at rest.
  auto health_of = [&](std::size_t i) -> const health_status* {
    if (i < samples.size()) return samples[i] ? &*samples[i] : nullptr;
    return &*after;
  };
  intervals_print(intervals, health_of);
  const auto mib = [](std::optional<double> b) { return b ? *b / 1048576.0 : -1.0; };
  std::printf("rss: %.1f MiB at the start, %.1f MiB after warm-up, %.1f MiB at the end; KV blocks free at the end: "
              "%.0f of %.0f\n",
              mib(before->number("rss_bytes")), mib(rss_baseline), mib(after->number("rss_bytes")),
              after->number("kv_blocks_free").value_or(-1), after->number("kv_blocks_total").value_or(-1));
  bool passed = plan_error.empty();
  for (const auto& c : checks) {
    std::printf("%s %s: %s\n", c.ok ? "PASS" : "FAIL", c.name.c_str(), c.detail.c_str());
    passed = passed && c.ok;
  }
  if (!o.out_path.empty()) {
    json_writer w;
    w.begin_object().field("tool", "pagedserve-loadgen").field("mode", "soak").field("label", o.label);
    w.field("target", o.target.url).field("soak_minutes", o.soak_minutes).field("passed", passed);
    w.key("checks").begin_array();
    for (const auto& c : checks) w.begin_object().field("name", c.name).field("ok", c.ok).field("detail", c.detail).end_object();
    w.end_array();
    // /health bodies go in as JSON when they are JSON objects, else as strings.
    w.key("health_before");
    before->numbers.empty() ? w.value(before->body) : w.raw(before->body);
    w.key("health_after");
    after->numbers.empty() ? w.value(after->body) : w.raw(after->body);
    w.key("intervals").begin_array();
    for (std::size_t i = 0; i < intervals.size(); ++i) {
      const auto& in = intervals[i];
      w.begin_object().field("start_s", in.start_s).field("end_s", in.end_s);
      for (const auto& [name, value] : level_summary_fields(in.summary)) w.field(name, value);
      w.key("errors").begin_object();
      for (const auto& [kind, n] : in.summary.errors) w.field(kind, n);
      w.end_object().key("health");
      const health_status* h = health_of(i);
      if (!h) w.value(std::string("unavailable"));
      else h->numbers.empty() ? w.value(h->body) : w.raw(h->body);
      w.end_object();
    }
    w.end_array();
    w.key("levels").begin_array().begin_object();
    for (const auto& [name, value] : level_summary_fields(s)) w.field(name, value);
    w.key("errors").begin_object();
    for (const auto& [kind, n] : s.errors) w.field(kind, n);
    w.end_object().key("requests").begin_array();
    for (const auto& rec : level.records) w.raw(request_json(rec, level.start, o.save_itl));
    w.end_array().end_object().end_array().end_object();
    if (auto written = file_write(o.out_path, w.take() + "\n"); !written) {
      std::fprintf(stderr, "loadgen: %s\n", written.error().c_str());
      return 1;
    }
  }
  std::printf("soak %s\n", passed ? "passed" : "FAILED");
  return passed ? 0 : 3;
}

}  // namespace pagedserve::loadgen
