#include "model/load_progress.hpp"

#include <spdlog/spdlog.h>

#include "model/load_phase.hpp"

namespace pagedserve {
namespace {

constexpr auto redraw_interval = std::chrono::milliseconds(100);  // at most 10 redraws a second
constexpr auto log_interval = std::chrono::seconds(5);            // without a terminal: one line per 5 s

}  // namespace

load_progress::load_progress(std::FILE* terminal, std::stop_token stop) : terminal_(terminal), stop_(std::move(stop)) {}

load_progress::~load_progress() { end(); }

void load_progress::throw_if_cancelled() const {
  if (stop_.stop_requested()) throw load_cancelled();
}

load_progress::step::step(load_progress* progress, std::string label, int n_items, std::uint64_t n_bytes)
    : p_(progress) {
  if (p_) p_->begin(std::move(label), n_items, n_bytes);
}

load_progress::step::~step() {
  if (p_) p_->end();
}

void load_progress::begin(std::string label, int n_items, std::uint64_t n_bytes) {
  end();
  label_ = std::move(label);
  n_items_ = n_items;
  n_bytes_ = n_bytes;
  items_done_ = 0;
  bytes_done_ = 0;
  began_ = std::chrono::steady_clock::now();
  drawn_ = false;
  reporter_ = std::jthread([this](std::stop_token stop) { report(std::move(stop)); });
}

void load_progress::end() {
  if (!reporter_.joinable()) return;
  reporter_.request_stop();
  reporter_.join();
  if (drawn_) {  // clear the line: the phase's own log line takes its place
    std::fputs("\r\033[K", terminal_);
    std::fflush(terminal_);
    drawn_ = false;
  }
}

std::string load_progress::line() const {
  const std::uint64_t done = bytes_done_.load(std::memory_order_relaxed);
  const double percent = n_bytes_ > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(n_bytes_) : 100.0;
  return fmt::format("{}: {}/{} matrices, {} / {} ({:.0f}%), {}", label_, items_done_.load(std::memory_order_relaxed),
                     n_items_, bytes_text(done), bytes_text(n_bytes_), percent,
                     duration_text(std::chrono::steady_clock::now() - began_));
}

void load_progress::report(std::stop_token stop) {
  auto last_log = began_;
  std::unique_lock lock(mu_);
  // Wakes every redraw_interval until end() asks it to stop; a step shorter than one interval
  // draws nothing.
  for (;;) {
    wake_.wait_for(lock, stop, redraw_interval, [] { return false; });
    if (stop.stop_requested()) return;
    if (terminal_) {
      std::fputs(("\r" + line() + "\033[K").c_str(), terminal_);
      std::fflush(terminal_);
      drawn_ = true;
    } else if (std::chrono::steady_clock::now() - last_log >= log_interval) {
      last_log = std::chrono::steady_clock::now();
      spdlog::info("{}", line());
    }
  }
}

}  // namespace pagedserve
