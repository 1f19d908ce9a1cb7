// The metrics registry and its Prometheus text rendering (exposition format 0.0.4).
#include <algorithm>
#include <charconv>
#include <cmath>

#include "pagedserve/check.hpp"
#include "metrics/metrics.hpp"

namespace pagedserve {
namespace {

// Shortest text that reads back as v ("0.1", "12", "+Inf").
std::string number_text(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, end) : std::string("0");
}

// {a="x",b="y"} from parts already rendered as key="value"; empty when there are none.
std::string label_set(std::string_view common, std::string_view extra) {
  if (common.empty() && extra.empty()) return {};
  std::string out = "{";
  out += common;
  if (!common.empty() && !extra.empty()) out += ',';
  out += extra;
  out += '}';
  return out;
}

}  // namespace

std::string metrics_escape_label(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

metric_histogram::metric_histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), buckets_(new std::atomic<std::uint64_t>[bounds_.size() + 1]) {
  ps_check(std::is_sorted(bounds_.begin(), bounds_.end()), "histogram buckets must ascend");
  for (std::size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void metric_histogram::observe(double v) {
  // The first bucket whose upper bound holds v ("le" is inclusive); past the last: +Inf.
  const auto i = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<std::uint64_t> metric_histogram::cumulative_counts() const {
  std::vector<std::uint64_t> out(bounds_.size() + 1);
  std::uint64_t running = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) out[i] = running += buckets_[i].load(std::memory_order_relaxed);
  return out;
}

metrics_registry::family* metrics_registry::find(std::string_view name) const {
  for (const auto& f : families_)
    if (f->name == name) return f.get();
  return nullptr;
}

metric_counter& metrics_registry::counter(std::string name, std::string help, std::string label_key,
                                          std::string label_value) {
  std::lock_guard lock(mu_);
  family* f = find(name);
  if (!f) {
    families_.push_back(std::make_unique<family>());
    f = families_.back().get();
    f->name = std::move(name);
    f->help = std::move(help);
    f->type = kind::counter;
    f->label_key = std::move(label_key);
  }
  ps_check(f->type == kind::counter, "metric registered twice with different types");
  auto& slot = f->counters[label_value];
  if (!slot) slot = std::make_unique<metric_counter>();
  return *slot;
}

metric_counter& metrics_registry::counter_with(std::string_view name, std::string_view label_value) {
  std::lock_guard lock(mu_);
  family* f = find(name);
  ps_check(f && f->type == kind::counter && !f->label_key.empty(), "counter_with: no labelled counter family");
  auto& slot = f->counters[std::string(label_value)];
  if (!slot) slot = std::make_unique<metric_counter>();
  return *slot;
}

metric_gauge& metrics_registry::gauge(std::string name, std::string help) {
  std::lock_guard lock(mu_);
  ps_check(!find(name), "metric registered twice");
  families_.push_back(std::make_unique<family>());
  family& f = *families_.back();
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = kind::gauge;
  f.gauge = std::make_unique<metric_gauge>();
  return *f.gauge;
}

metric_histogram& metrics_registry::histogram(std::string name, std::string help, std::vector<double> upper_bounds) {
  std::lock_guard lock(mu_);
  ps_check(!find(name), "metric registered twice");
  families_.push_back(std::make_unique<family>());
  family& f = *families_.back();
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = kind::histogram;
  f.histogram = std::make_unique<metric_histogram>(std::move(upper_bounds));
  return *f.histogram;
}

std::string metrics_registry::render(std::string_view common_labels) const {
  std::lock_guard lock(mu_);
  std::string out;
  out.reserve(8192);
  for (const auto& fp : families_) {
    const family& f = *fp;
    static constexpr std::string_view type_names[] = {"counter", "gauge", "histogram"};
    out += "# HELP " + f.name + " " + f.help + "\n";
    out += "# TYPE " + f.name + " " + std::string(type_names[static_cast<int>(f.type)]) + "\n";
    switch (f.type) {
      case kind::counter:
        for (const auto& [value, c] : f.counters) {
          const std::string extra = f.label_key.empty() ? "" : f.label_key + "=\"" + metrics_escape_label(value) + "\"";
          out += f.name + label_set(common_labels, extra) + " " + number_text(c->value()) + "\n";
        }
        break;
      case kind::gauge:
        out += f.name + label_set(common_labels, {}) + " " + number_text(f.gauge->value()) + "\n";
        break;
      case kind::histogram: {
        const metric_histogram& h = *f.histogram;
        const auto counts = h.cumulative_counts();
        for (std::size_t i = 0; i <= h.upper_bounds().size(); ++i) {
          const double le = i < h.upper_bounds().size() ? h.upper_bounds()[i] : INFINITY;
          out += f.name + "_bucket" + label_set(common_labels, "le=\"" + number_text(le) + "\"") + " " +
                 std::to_string(counts[i]) + "\n";
        }
        out += f.name + "_sum" + label_set(common_labels, {}) + " " + number_text(h.sum()) + "\n";
        out += f.name + "_count" + label_set(common_labels, {}) + " " + std::to_string(counts.back()) + "\n";
        break;
      }
    }
  }
  return out;
}

}  // namespace pagedserve
