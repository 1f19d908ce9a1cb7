#include "model/load_phase.hpp"

#include <spdlog/spdlog.h>

#include <array>

namespace pagedserve {

load_phase::load_phase(std::string_view what) : what_(what), start_(clock::now()) {}

load_phase::~load_phase() {
  if (!finished_) spdlog::debug("{}: stopped after {}", what_, duration_text(elapsed()));
}

void load_phase::finish(std::string_view result) {
  if (finished_) return;
  finished_ = true;
  spdlog::info("{} in {}", result, duration_text(elapsed()));
}

std::string bytes_text(std::uint64_t bytes) {
  constexpr std::array<const char*, 5> units = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < units.size()) {
    v /= 1024.0;
    ++u;
  }
  // Three significant digits at most: 1.23 GiB is precise enough for a log line, 123 MiB too.
  return v < 10.0 ? fmt::format("{:.2f} {}", v, units[u])
                  : v < 100.0 ? fmt::format("{:.1f} {}", v, units[u]) : fmt::format("{:.0f} {}", v, units[u]);
}

std::string duration_text(std::chrono::steady_clock::duration d) {
  const double ms = std::chrono::duration<double, std::milli>(d).count();
  if (ms < 1.0) return fmt::format("{:.2f} ms", ms);
  if (ms < 1000.0) return fmt::format("{:.0f} ms", ms);
  const double s = ms / 1000.0;
  if (s < 60.0) return fmt::format("{:.1f} s", s);
  const auto whole = static_cast<long long>(s);
  return fmt::format("{} min {} s", whole / 60, whole % 60);
}

}  // namespace pagedserve
