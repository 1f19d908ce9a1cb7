// Results JSON, tables and comparisons (report.hpp).
#include "loadgen/report.hpp"

#include <simdjson.h>

#include <ctime>
#include <fstream>
#include <set>
#include <thread>

#include "loadgen/json_writer.hpp"

namespace pagedserve::loadgen {

namespace {

const char* outcome_name(request_outcome o) {
  switch (o) {
    case request_outcome::pending: return "pending";
    case request_outcome::completed: return "completed";
    case request_outcome::failed: return "failed";
    case request_outcome::cancelled: return "cancelled";
    case request_outcome::disconnected: return "disconnected";
  }
  return "unknown";
}

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string mode_of(const options& o) { return o.rates.empty() ? "concurrency" : "rate"; }

double field(const std::map<std::string, double>& level, const std::string& name) {
  const auto it = level.find(name);
  return it == level.end() ? 0.0 : it->second;
}

}  // namespace

std::string request_json(const request_record& rec, clock_type::time_point level_start, bool with_itl) {
  const auto lat = request_latency_of(rec);
  json_writer w;
  w.begin_object().field("index", rec.index).field("id", rec.id).field("outcome", outcome_name(rec.outcome));
  if (!rec.error_kind.empty()) w.field("error", rec.error_kind).field("error_message", rec.error_message);
  if (!rec.finish_reason.empty()) w.field("finish_reason", rec.finish_reason);
  w.field("prompt_tokens", rec.prompt_tokens >= 0 ? rec.prompt_tokens : rec.prompt_tokens_planned);
  w.field("prompt_tokens_planned", rec.prompt_tokens_planned).field("max_tokens", rec.max_tokens);
  w.field("output_tokens", rec.output_tokens_counted()).field("usage_reported", rec.output_tokens >= 0);
  w.field("n_chunks", rec.n_chunks);
  if (rec.sent_yet()) {
    w.field("sent_ms", std::chrono::duration<double, std::milli>(rec.sent - level_start).count());
    w.field("ttft_ms", lat.ttft_ms).field("tpot_ms", lat.tpot_ms).field("e2el_ms", lat.e2el_ms);
  }
  float max_itl = 0;
  for (const float g : rec.itl_ms) max_itl = std::max(max_itl, g);
  w.field("max_itl_ms", static_cast<double>(max_itl));
  if (rec.action != request_action::none)
    w.field("action", rec.action == request_action::cancel ? "cancel" : "disconnect").field("action_after_s", rec.action_after_s);
  if (with_itl) {
    w.key("itl_ms").begin_array();
    for (const float g : rec.itl_ms) w.value(static_cast<double>(g));
    w.end_array();
  }
  w.end_object();
  return w.take();
}

std::string results_json(const options& o, const std::vector<level_result>& levels,
                         const std::vector<level_summary>& summaries) {
  json_writer w;
  w.begin_object().field("tool", "pagedserve-loadgen").field("label", o.label).field("target", o.target.url);
  w.field("backend", o.target.kind == target_spec::api::websocket ? "websocket" : "openai-completions");
  w.field("date", now_iso8601()).field("mode", mode_of(o));
  w.key("config").begin_object();
  w.field("prompt_tokens", o.prompt_tokens.text).field("max_tokens", o.max_tokens.text);
  w.field("prompt_tokens_exact", !o.tokenizer_path.empty()).field("tokenizer", o.tokenizer_path);
  w.field("shared_prefix_tokens", o.shared_prefix_tokens).field("ignore_eos", o.ignore_eos);
  w.field("temperature", o.temperature).field("seed", static_cast<long long>(o.seed));
  w.field("num_requests", o.num_requests).field("max_concurrency", o.max_concurrency);
  w.field("timeout_s", o.timeout_s).field("model", o.model_name);
  if (o.goodput.any()) {
    w.key("goodput").begin_object();
    if (o.goodput.ttft_ms) w.field("ttft_ms", *o.goodput.ttft_ms);
    if (o.goodput.tpot_ms) w.field("tpot_ms", *o.goodput.tpot_ms);
    if (o.goodput.e2el_ms) w.field("e2el_ms", *o.goodput.e2el_ms);
    w.end_object();
  }
  w.end_object();
  w.key("levels").begin_array();
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const level_summary& s = summaries[i];
    w.begin_object();
    for (const auto& [name, value] : level_summary_fields(s)) {
      if ((name == "concurrency" && s.concurrency == 0) || (name == "request_rate" && s.rate == 0)) continue;
      static const std::set<std::string> counts = {"concurrency", "num_requests", "completed", "failed",
                                                    "total_input_tokens", "total_output_tokens", "max_concurrency",
                                                    "good_completed", "cancelled", "disconnected"};
      const bool integral = counts.contains(name);
      if (integral) w.field(name, static_cast<long long>(value));
      else w.field(name, value);
    }
    w.key("errors").begin_object();
    for (const auto& [kind, n] : s.errors) w.field(kind, n);
    w.end_object();
    if (!s.error.empty()) w.field("error", s.error);
    w.key("requests").begin_array();
    for (const auto& rec : levels[i].records) w.raw(request_json(rec, levels[i].start, o.save_itl));
    w.end_array().end_object();
  }
  w.end_array().end_object();
  return w.take() + "\n";
}

result_set result_set_of(const options& o, const std::vector<level_summary>& summaries) {
  result_set r;
  r.label = o.label.empty() ? o.target.url : o.label;
  r.mode = mode_of(o);
  for (const auto& s : summaries) {
    std::map<std::string, double> m;
    for (auto& [k, v] : level_summary_fields(s)) m[k] = v;
    r.levels.push_back(std::move(m));
  }
  return r;
}

std::expected<result_set, std::string> result_set_load(const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto ec = parser.load(path).get(doc)) return std::unexpected(path + ": " + simdjson::error_message(ec));
  result_set r;
  std::string_view text;
  if (!doc["label"].get(text)) r.label = std::string(text);
  if (r.label.empty() && !doc["target"].get(text)) r.label = std::string(text);
  if (r.label.empty()) r.label = path;
  r.mode = !doc["mode"].get(text) ? std::string(text) : "concurrency";
  simdjson::dom::array levels;
  if (doc["levels"].get(levels)) return std::unexpected(path + ": no \"levels\" array (not a loadgen result file?)");
  for (simdjson::dom::object level : levels) {
    std::map<std::string, double> m;
    for (auto [key, value] : level) {
      double d = 0;
      if (value.is_number() && !value.get(d)) m[std::string(key)] = d;
    }
    r.levels.push_back(std::move(m));
  }
  return r;
}

void table_header(std::FILE* out, const std::string& mode) {
  std::fprintf(out, "%8s %9s %8s %10s %9s %9s %9s %8s %8s %9s\n", mode == "rate" ? "rate" : "conc", "done/fail",
               "req/s", "out tok/s", "TTFT p50", "TTFT p99", "TPOT p50", "ITL p50", "ITL p99", "E2EL p50");
  std::fprintf(out, "%8s %9s %8s %10s %9s %9s %9s %8s %8s %9s\n", "", "", "", "", "ms", "ms", "ms", "ms", "ms", "ms");
}

void table_row(std::FILE* out, const level_summary& s) {
  char level[32], counts[32];
  if (s.concurrency > 0) std::snprintf(level, sizeof level, "%d", s.concurrency);
  else std::snprintf(level, sizeof level, "%.3g/s", s.rate);
  std::snprintf(counts, sizeof counts, "%d/%d", s.completed, s.failed);
  std::fprintf(out, "%8s %9s %8.2f %10.1f %9.1f %9.1f %9.2f %8.2f %8.2f %9.1f\n", level, counts, s.request_throughput,
               s.output_throughput, s.ttft.median, s.ttft.p99, s.tpot.median, s.itl.median, s.itl.p99, s.e2el.median);
  for (const auto& [kind, n] : s.errors) std::fprintf(out, "%8s   %d failed: %s\n", "", n, kind.c_str());
  // The server under test keeps about its thread count busy; a load average above the core count
  // at the start means something else was running too.
  if (s.loadavg_start > static_cast<double>(std::thread::hardware_concurrency()))
    std::fprintf(out, "%8s   host load average %.1f at the start (%u CPUs): other work competes, numbers are noisy\n", "",
                 s.loadavg_start, std::thread::hardware_concurrency());
  if (!s.error.empty()) std::fprintf(out, "%8s   level did not run: %s\n", "", s.error.c_str());
  std::fflush(out);
}

int compare_print(std::FILE* out, const result_set& a, const result_set& b) {
  if (a.mode != b.mode) {
    std::fprintf(stderr, "loadgen: cannot compare a %s sweep with a %s sweep\n", a.mode.c_str(), b.mode.c_str());
    return 1;
  }
  const std::string x = a.mode == "rate" ? "request_rate" : "concurrency";
  static const char* metrics[] = {"output_throughput", "request_throughput", "total_token_throughput",
                                  "median_ttft_ms",    "p99_ttft_ms",        "median_tpot_ms",
                                  "median_itl_ms",     "p99_itl_ms",         "median_e2el_ms"};
  std::fprintf(out, "A = %s\nB = %s\n", a.label.c_str(), b.label.c_str());
  std::fprintf(out, "%8s %-24s %12s %12s %8s\n", x == "request_rate" ? "rate" : "conc", "metric", "A", "B", "B/A");
  int matched = 0;
  for (const auto& la : a.levels) {
    for (const auto& lb : b.levels) {
      if (field(la, x) != field(lb, x)) continue;
      ++matched;
      for (const char* m : metrics) {
        const double va = field(la, m), vb = field(lb, m);
        char ratio[16] = "-";
        if (va != 0) std::snprintf(ratio, sizeof ratio, "%.2f", vb / va);
        std::fprintf(out, "%8g %-24s %12.2f %12.2f %8s\n", field(la, x), m, va, vb, ratio);
      }
      char ca[32], cb[32];
      std::snprintf(ca, sizeof ca, "%.0f/%.0f", field(la, "completed"), field(la, "failed"));
      std::snprintf(cb, sizeof cb, "%.0f/%.0f", field(lb, "completed"), field(lb, "failed"));
      std::fprintf(out, "%8g %-24s %12s %12s\n", field(la, x), "completed/failed", ca, cb);
      break;
    }
  }
  if (matched == 0) {
    std::fprintf(stderr, "loadgen: the two files share no %s level\n", x.c_str());
    return 1;
  }
  std::fprintf(out, "(throughput: B/A > 1 means B is faster; latency: B/A < 1 means B is faster)\n");
  return 0;
}

std::expected<void, std::string> file_write(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return std::unexpected("cannot open '" + path + "' for writing");
  f << text;
  f.close();
  if (!f) return std::unexpected("cannot write '" + path + "'");
  return {};
}

}  // namespace pagedserve::loadgen
