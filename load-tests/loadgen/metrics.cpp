// Level metrics (metrics.hpp).
#include "loadgen/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pagedserve::loadgen {

namespace {
double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
}  // namespace

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

latency_stats latency_stats_of(std::vector<double> v) {
  latency_stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double sq = 0;
  for (const double x : v) sq += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(sq / static_cast<double>(v.size()));  // population std, as numpy's default
  s.median = percentile(v, 50);
  s.p90 = percentile(v, 90);
  s.p99 = percentile(v, 99);
  return s;
}

request_latency request_latency_of(const request_record& rec) {
  request_latency l;
  if (!rec.sent_yet()) return l;
  const auto last = rec.n_chunks > 0 ? rec.last : rec.ended;
  l.ttft_ms = ms_between(rec.sent, rec.n_chunks > 0 ? rec.first : rec.ended);
  l.e2el_ms = ms_between(rec.sent, last);
  const int out = rec.output_tokens_counted();
  if (out > 1) l.tpot_ms = (l.e2el_ms - l.ttft_ms) / (out - 1);
  return l;
}

level_summary level_summarize(const level_result& level, const slo_spec& slo) {
  level_summary s;
  s.concurrency = level.concurrency;
  s.rate = level.rate;
  s.num_requests = static_cast<int>(level.records.size());
  s.duration_s = level.duration_s;
  s.error = level.error;
  s.client_cpu_s = level.client_cpu_s;
  s.loadavg_start = level.loadavg_start;
  s.loadavg_end = level.loadavg_end;
  s.has_goodput = slo.any();
  std::vector<double> ttft, tpot, itl, e2el;
  // Requests in flight over time, from send and end instants.
  std::vector<std::pair<clock_type::time_point, int>> edges;
  for (const auto& rec : level.records) {
    if (rec.sent_yet() && rec.ended != clock_type::time_point{}) {
      edges.emplace_back(rec.sent, 1);
      edges.emplace_back(rec.ended, -1);
    }
    switch (rec.outcome) {
      case request_outcome::completed: break;
      case request_outcome::cancelled: ++s.cancelled; continue;
      case request_outcome::disconnected: ++s.disconnected; continue;
      case request_outcome::failed:
      case request_outcome::pending:
        ++s.failed;
        ++s.errors[rec.error_kind.empty() ? "unknown" : rec.error_kind];
        continue;
    }
    ++s.completed;
    const auto lat = request_latency_of(rec);
    const int out = rec.output_tokens_counted();
    s.total_input_tokens += rec.prompt_tokens >= 0 ? rec.prompt_tokens : std::max(0, rec.prompt_tokens_planned);
    s.total_output_tokens += out;
    ttft.push_back(lat.ttft_ms);
    e2el.push_back(lat.e2el_ms);
    if (out > 1) tpot.push_back(lat.tpot_ms);
    itl.insert(itl.end(), rec.itl_ms.begin(), rec.itl_ms.end());
    const bool good = (!slo.ttft_ms || lat.ttft_ms <= *slo.ttft_ms) && (!slo.tpot_ms || lat.tpot_ms <= *slo.tpot_ms) &&
                      (!slo.e2el_ms || lat.e2el_ms <= *slo.e2el_ms);
    if (good) ++s.good_completed;
  }
  std::sort(edges.begin(), edges.end());  // at equal instants ends (-1) sort before sends (+1)
  int now = 0;
  for (const auto& [t, d] : edges) s.max_concurrency_seen = std::max(s.max_concurrency_seen, now += d);
  if (s.duration_s > 0) {
    s.request_throughput = s.completed / s.duration_s;
    s.output_throughput = static_cast<double>(s.total_output_tokens) / s.duration_s;
    s.total_token_throughput = static_cast<double>(s.total_input_tokens + s.total_output_tokens) / s.duration_s;
    s.request_goodput = s.good_completed / s.duration_s;
  }
  s.ttft = latency_stats_of(std::move(ttft));
  s.tpot = latency_stats_of(std::move(tpot));
  s.itl = latency_stats_of(std::move(itl));
  s.e2el = latency_stats_of(std::move(e2el));
  return s;
}

std::vector<level_interval> level_intervals(const level_result& level, clock_type::duration width, const slo_spec& slo) {
  std::vector<level_interval> out;
  if (width <= clock_type::duration::zero()) return out;
  clock_type::time_point end = level.end;
  for (const auto& rec : level.records) end = std::max(end, rec.ended);
  const auto n = std::max<std::int64_t>(1, (end - level.start + width - clock_type::duration(1)) / width);
  std::vector<level_result> parts(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    auto& part = parts[static_cast<std::size_t>(i)];
    part.concurrency = level.concurrency;
    part.rate = level.rate;
    part.start = level.start + i * width;
    part.end = std::min(end, part.start + width);
    part.duration_s = std::chrono::duration<double>(part.end - part.start).count();
  }
  for (const auto& rec : level.records) {
    const bool ended = rec.ended != clock_type::time_point{};
    const auto i = ended ? std::clamp<std::int64_t>((rec.ended - level.start) / width, 0, n - 1) : n - 1;
    parts[static_cast<std::size_t>(i)].records.push_back(rec);
  }
  for (const auto& part : parts) {
    out.push_back({std::chrono::duration<double>(part.start - level.start).count(),
                   std::chrono::duration<double>(part.end - level.start).count(), level_summarize(part, slo)});
  }
  return out;
}

std::vector<std::pair<std::string, double>> level_summary_fields(const level_summary& s) {
  std::vector<std::pair<std::string, double>> f = {
      {"concurrency", s.concurrency},
      {"request_rate", s.rate},
      {"num_requests", s.num_requests},
      {"completed", s.completed},
      {"failed", s.failed},
      {"duration_s", s.duration_s},
      {"total_input_tokens", static_cast<double>(s.total_input_tokens)},
      {"total_output_tokens", static_cast<double>(s.total_output_tokens)},
      {"request_throughput", s.request_throughput},
      {"output_throughput", s.output_throughput},
      {"total_token_throughput", s.total_token_throughput},
      {"max_concurrency", s.max_concurrency_seen},
      {"client_cpu_s", s.client_cpu_s},
      {"host_loadavg_start", s.loadavg_start},
      {"host_loadavg_end", s.loadavg_end},
  };
  if (s.has_goodput) {
    f.emplace_back("request_goodput", s.request_goodput);
    f.emplace_back("good_completed", s.good_completed);
  }
  if (s.cancelled || s.disconnected) {
    f.emplace_back("cancelled", s.cancelled);
    f.emplace_back("disconnected", s.disconnected);
  }
  const std::pair<const char*, const latency_stats*> metrics[] = {
      {"ttft", &s.ttft}, {"tpot", &s.tpot}, {"itl", &s.itl}, {"e2el", &s.e2el}};
  for (const auto& [name, st] : metrics) {
    const std::string n = name;
    f.emplace_back("mean_" + n + "_ms", st->mean);
    f.emplace_back("median_" + n + "_ms", st->median);
    f.emplace_back("std_" + n + "_ms", st->std);
    f.emplace_back("p90_" + n + "_ms", st->p90);
    f.emplace_back("p99_" + n + "_ms", st->p99);
  }
  return f;
}

}  // namespace pagedserve::loadgen
