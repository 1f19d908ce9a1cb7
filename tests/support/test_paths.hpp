#pragma once
// Where tests find ../shared (read in place) and the built server binary.
#include <filesystem>
#include <string>

namespace pagedserve::test {

// ../shared beside the clone; empty path when it is absent (tests then GTEST_SKIP with a message).
std::filesystem::path shared_dir();
// shared_dir()/models/<name>, or empty when absent.
std::filesystem::path shared_model(const std::string& name);
std::filesystem::path server_binary();

}  // namespace pagedserve::test

// Skips the current test, saying why, when ../shared is not beside the clone.
#define PAGEDSERVE_REQUIRE_SHARED(path)                                                   \
  do {                                                                                    \
    if ((path).empty()) GTEST_SKIP() << "../shared is absent: skipping (needs " #path ")"; \
  } while (0)
