// Download progress on a terminal (a bar redrawn with '\r') and in logs (periodic lines).
#include <gtest/gtest.h>

#include <regex>

#include "src/hub/download_progress.hpp"

namespace pagedserve {
namespace {

using namespace std::chrono_literals;

TEST(download_progress, formats_bytes_and_durations) {
  EXPECT_EQ(progress_bytes(999), "999 B");
  EXPECT_EQ(progress_bytes(1500), "1.50 kB");
  EXPECT_EQ(progress_bytes(12'345'678), "12.3 MB");
  EXPECT_EQ(progress_bytes(600'000'000), "600 MB");
  EXPECT_EQ(progress_bytes(4'020'000'000), "4.02 GB");
  EXPECT_EQ(progress_duration(42s), "42s");
  EXPECT_EQ(progress_duration(185s), "3m05s");
  EXPECT_EQ(progress_duration(3720s), "1h02m");
}

TEST(download_progress, tty_redraws_one_line_in_place) {
  std::string screen;
  download_progress::options o;
  o.tty = true;
  o.write = [&](std::string_view t) { screen += t; };
  o.log = [](const std::string&) { FAIL() << "no log lines on a terminal"; };
  download_progress p(o);
  const auto t0 = download_progress::clock::time_point{} + 1h;
  p.start("model.safetensors", 10'000'000, 0, t0);
  p.advance(1'000'000, t0 + 10ms);  // too soon after the first draw: no redraw
  const auto draws_before = std::count(screen.begin(), screen.end(), '\r');
  p.advance(1'000'000, t0 + 1s);  // 2 MB in 1 s
  EXPECT_EQ(std::count(screen.begin(), screen.end(), '\r'), draws_before + 1);
  EXPECT_NE(screen.find("\rmodel.safetensors  2.00 MB/10.0 MB   20%  2.00 MB/s  ETA 4s"), std::string::npos) << screen;
  p.advance(8'000'000, t0 + 2s);
  p.finish(t0 + 2s);
  EXPECT_TRUE(screen.ends_with("\n")) << screen;
  EXPECT_NE(screen.find("10.0 MB/10.0 MB  100%"), std::string::npos) << screen;
  EXPECT_EQ(screen.find('\n'), screen.size() - 1);  // one line, redrawn

  // A bar already showing the last byte is not drawn again, only ended.
  screen.clear();
  p.start("config.json", 500, 0, t0);
  p.advance(500, t0 + 1s);
  p.finish(t0 + 1s);
  EXPECT_EQ(std::count(screen.begin(), screen.end(), '\r'), 2) << screen;
  EXPECT_TRUE(screen.ends_with("100%  500 B/s  in 1s\n")) << screen;
}

TEST(download_progress, logs_lines_every_interval_when_not_a_tty) {
  std::vector<std::string> lines;
  download_progress::options o;
  o.tty = false;
  o.log_every = 5s;
  o.write = [](std::string_view) { FAIL() << "no raw terminal output in logs"; };
  o.log = [&](const std::string& l) { lines.push_back(l); };
  download_progress p(o);
  const auto t0 = download_progress::clock::time_point{} + 1h;
  p.start("w.gguf", 100'000'000, 40'000'000, t0);  // a resumed file
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("resuming at 40.0 MB"), std::string::npos) << lines[0];
  for (int i = 1; i <= 12; ++i) p.advance(5'000'000, t0 + i * 1s);  // 12 s: lines at 5 s and 10 s
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[1].find("65.0 MB/100 MB   65%  5.00 MB/s  ETA 7s"), std::string::npos) << lines[1];
  p.finish(t0 + 12s);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_TRUE(lines[3].starts_with("downloaded w.gguf  100 MB/100 MB  100%")) << lines[3];
  for (const auto& l : lines) EXPECT_EQ(l.find('\r'), std::string::npos);
}

}  // namespace
}  // namespace pagedserve
