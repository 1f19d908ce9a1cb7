#pragma once
// What the harnesses that run the real binaries (tests/e2e, the loadtest tests) need to run under
// sanitizers: one deadline scale for every wait on a child process, and a check of a child's stderr
// for sanitizer reports (a server killed at a test's end, or whose exit status a test ignores,
// would otherwise take its report with it). Header-only so the loadgen tests use it too.
//
// PAGEDSERVE_TEST_TIME_SCALE (a number >= 1, default 1) multiplies those deadlines: an ASan+UBSan
// server starts, generates and shuts down several times slower than a Release one, and CI sets it
// for its ASan stage (scripts/run-tests.sh). The node tests read the same variable
// (tests/support/server.mjs).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <string_view>

namespace pagedserve::test {

// The deadline multiplier from PAGEDSERVE_TEST_TIME_SCALE, read once; 1 when unset or invalid.
inline double time_scale() {
  static const double scale = [] {
    const char* text = std::getenv("PAGEDSERVE_TEST_TIME_SCALE");
    const double s = text ? std::strtod(text, nullptr) : 1.0;
    return s >= 1.0 && s <= 100.0 ? s : 1.0;
  }();
  return scale;
}

// d stretched by time_scale(): a deadline for something that must happen, never a sleep or a
// duration under test (an idle timeout the server is configured with stays as it is).
template <class Rep, class Period>
std::chrono::milliseconds scaled(std::chrono::duration<Rep, Period> d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d * time_scale());
}

// Resident memory a server of this tree may hold beyond a Release one's: ASan keeps freed memory in
// its quarantine (256 MiB by default) before reusing it, so RSS bounds must allow for that much.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr long long sanitizer_rss_allowance_bytes = 256ll << 20;
#else
inline constexpr long long sanitizer_rss_allowance_bytes = 0;
#endif

// How many of a randomized property test's cases an instrumented tree runs: a quarter. The Release tree
// runs them all for the property; ASan's 5-10x slowdown bought its memory checks on a sample, at a
// minute and more of each CI run for the longest of them.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr int sanitizer_case_divisor = 4;
#else
inline constexpr int sanitizer_case_divisor = 1;
#endif

// The first sanitizer report in a process's stderr (ASan, LSan, UBSan, TSan), from its header
// line on; empty when there is none.
inline std::string sanitizer_report(std::string_view log) {
  static constexpr std::string_view markers[] = {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                                                 "WARNING: ThreadSanitizer", "runtime error: "};
  std::size_t first = std::string_view::npos;
  for (const auto marker : markers) first = std::min(first, log.find(marker));
  if (first == std::string_view::npos) return {};
  const std::size_t line = log.rfind('\n', first);
  const std::size_t start = line == std::string_view::npos ? 0 : line + 1;
  return std::string(log.substr(start, 6000));
}

}  // namespace pagedserve::test
