// The load log's pieces: sizes and durations as the phase lines print them, the progress line a
// conversion step draws on a terminal (and clears), and a load cancelled through its progress.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "model/demo_model.hpp"
#include "pagedserve/model.hpp"
#include "src/model/load_phase.hpp"
#include "src/model/load_progress.hpp"

namespace pagedserve {
namespace {

using namespace std::chrono_literals;

TEST(load_log, sizes_in_binary_units_with_three_digits_at_most) {
  EXPECT_EQ(bytes_text(0), "0 B");
  EXPECT_EQ(bytes_text(1023), "1023 B");
  EXPECT_EQ(bytes_text(1024), "1.00 KiB");
  EXPECT_EQ(bytes_text(1536), "1.50 KiB");
  EXPECT_EQ(bytes_text(64ull << 20), "64.0 MiB");
  EXPECT_EQ(bytes_text(300ull << 20), "300 MiB");
  EXPECT_EQ(bytes_text((5ull << 30) / 4), "1.25 GiB");
}

TEST(load_log, durations_from_fractions_of_a_millisecond_to_minutes) {
  EXPECT_EQ(duration_text(40us), "0.04 ms");
  EXPECT_EQ(duration_text(35ms), "35 ms");
  EXPECT_EQ(duration_text(2100ms), "2.1 s");
  EXPECT_EQ(duration_text(192s), "3 min 12 s");
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Polls path until it holds text (true) or 10 s pass: waits on the reporter thread's state, not
// on how fast it runs.
bool wait_for_text(const std::filesystem::path& path, const std::string& text) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (read_all(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(load_progress, a_step_redraws_its_line_on_the_terminal_and_clears_it_when_it_ends) {
  char name[] = "/tmp/load_progress_test_XXXXXX";
  const int fd = ::mkstemp(name);
  ASSERT_GE(fd, 0);
  const std::filesystem::path path = name;
  std::FILE* terminal = ::fdopen(fd, "w");
  ASSERT_NE(terminal, nullptr);
  {
    load_progress progress(terminal);
    load_progress::step step(&progress, "quantizing weights to int8", 3, 3u << 20);
    step.advance(1u << 20);
    step.advance(1u << 20);
    EXPECT_TRUE(wait_for_text(path, "\rquantizing weights to int8: 2/3 matrices, 2.00 MiB / 3.00 MiB (67%), "))
        << read_all(path);
  }
  const std::string out = read_all(path);
  EXPECT_TRUE(out.ends_with("\r\033[K")) << out;  // cleared: the phase's log line takes its place
  std::fclose(terminal);
  std::filesystem::remove(path);
}

TEST(load_progress, a_null_progress_reports_nowhere_and_never_cancels) {
  load_progress::step step(nullptr, "converting weights to bf16", 2, 100);
  step.advance(50);
  EXPECT_NO_THROW(step.throw_if_cancelled());
}

TEST(load_progress, conversion_runs_to_the_end_unless_its_stop_is_requested) {
  const auto [demo, tok] = demo_model_make();
  std::stop_source stop;
  load_progress progress(nullptr, stop.get_token());
  model converted = *demo;
  model_convert_weights(converted, weight_format::int8, &progress);
  EXPECT_EQ(converted.layers[0].wq.type, dtype::i8);
  EXPECT_EQ(converted.classifier, converted.token_embedding);

  stop.request_stop();
  EXPECT_THROW(progress.throw_if_cancelled(), load_cancelled);
  model cancelled = *demo;
  EXPECT_THROW(model_convert_weights(cancelled, weight_format::int8, &progress), load_cancelled);
}

}  // namespace
}  // namespace pagedserve
