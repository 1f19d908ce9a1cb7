#include "hub/download_progress.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <fmt/format.h>

namespace pagedserve {

std::string progress_bytes(std::uint64_t n) {
  if (n < 1000) return std::to_string(n) + " B";
  static constexpr const char* units[] = {"kB", "MB", "GB", "TB"};
  double v = static_cast<double>(n);
  int u = -1;
  while (v >= 1000 && u < 3) v /= 1000, ++u;
  return fmt::format("{:.{}f} {}", v, v < 10 ? 2 : v < 100 ? 1 : 0, units[u]);
}

std::string progress_duration(std::chrono::seconds s) {
  const auto n = s.count();
  if (n < 60) return std::to_string(n) + "s";
  if (n < 3600) return fmt::format("{}m{:02}s", n / 60, n % 60);
  return fmt::format("{}h{:02}m", n / 3600, n % 3600 / 60);
}

download_progress download_progress::for_stderr() {
  options o;
  o.tty = ::isatty(STDERR_FILENO) == 1;
  o.write = [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
  };
  o.log = [](const std::string& line) { spdlog::info("{}", line); };
  return download_progress(std::move(o));
}

void download_progress::start(std::string name, std::uint64_t total, std::uint64_t done, clock::time_point now) {
  name_ = std::move(name);
  total_ = total;
  done_ = resumed_from_ = done;
  started_ = last_shown_ = now;
  active_ = true;
  last_width_ = 0;
  if (o_.tty) draw(now, false);
  else o_.log(done > 0 ? "downloading " + name_ + " (" + progress_bytes(total) + ", resuming at " + progress_bytes(done) + ")"
                       : "downloading " + name_ + " (" + progress_bytes(total) + ")");
}

void download_progress::advance(std::uint64_t n, clock::time_point now) {
  done_ += n;
  if (!active_) return;
  if (now - last_shown_ >= (o_.tty ? o_.redraw_every : o_.log_every)) draw(now, false);
}

void download_progress::restart(clock::time_point now) {
  done_ = resumed_from_ = 0;
  started_ = now;
}

void download_progress::finish(clock::time_point now) {
  if (!active_) return;
  if (o_.tty && shown_done_ == done_) o_.write("\n");  // the bar already says it all
  else draw(now, true);
  active_ = false;
}

std::string download_progress::status(clock::time_point now) const {
  const double secs = std::chrono::duration<double>(now - started_).count();
  const double rate = secs > 0 ? static_cast<double>(done_ - resumed_from_) / secs : 0.0;
  std::string s = name_ + "  " + progress_bytes(done_);
  if (total_ > 0) s += "/" + progress_bytes(total_) + fmt::format("  {:3}%", done_ * 100 / total_);
  s += "  " + progress_bytes(static_cast<std::uint64_t>(rate)) + "/s";
  if (total_ > done_ && rate > 0)
    s += "  ETA " + progress_duration(std::chrono::seconds(static_cast<long>((total_ - done_) / rate)));
  else if (total_ > 0 && done_ >= total_)
    s += "  in " + progress_duration(std::chrono::seconds(static_cast<long>(secs)));
  return s;
}

void download_progress::draw(clock::time_point now, bool final) {
  last_shown_ = now;
  shown_done_ = done_;
  const std::string line = status(now);
  if (!o_.tty) {
    o_.log((final ? "downloaded " : "downloading ") + line);
    return;
  }
  std::string out = "\r" + line;
  if (line.size() < last_width_) out.append(last_width_ - line.size(), ' ');  // wipe a longer previous line
  last_width_ = std::max(last_width_, line.size());
  if (final) out += "\n";
  o_.write(out);
}

}  // namespace pagedserve
