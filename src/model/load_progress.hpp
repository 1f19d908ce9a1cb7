#pragma once
// Progress of the long part of a model load, converting or quantizing every matrix (seconds to
// minutes for a large model): on a terminal one line redrawn in place,
//   quantizing weights to int8: 120/197 matrices, 812 MiB / 1.23 GiB (66%), 1.4 s
// elsewhere (a log file, a pipe) an info line every few seconds for a load that long, and nothing
// for a short one. It is also how a load learns to stop (a signal during start-up): the conversion
// loop asks between matrices.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>

namespace pagedserve {

// Thrown by a load whose stop was requested; caught where the load was started.
class load_cancelled : public std::runtime_error {
 public:
  load_cancelled() : std::runtime_error("model load cancelled") {}
};

class load_progress {
 public:
  // terminal: where the redrawn line goes (stderr when it is a tty); null: periodic log lines.
  // stop: requested when the load should be abandoned.
  explicit load_progress(std::FILE* terminal, std::stop_token stop = {});
  ~load_progress();
  load_progress(const load_progress&) = delete;
  load_progress& operator=(const load_progress&) = delete;

  bool stop_requested() const { return stop_.stop_requested(); }
  void throw_if_cancelled() const;

  // One long step as the loop that does it reports it. The loop only bumps two atomic counters;
  // a reporter thread reads them and redraws at most 10 times a second. Its line is cleared when
  // the step ends, so the phase's log line comes next. A null progress reports nowhere.
  class step {
   public:
    step(load_progress* progress, std::string label, int n_items, std::uint64_t n_bytes);
    ~step();
    step(const step&) = delete;
    step& operator=(const step&) = delete;
    // One item of `bytes` done.
    void advance(std::uint64_t bytes) {
      if (!p_) return;
      p_->items_done_.fetch_add(1, std::memory_order_relaxed);
      p_->bytes_done_.fetch_add(bytes, std::memory_order_relaxed);
    }
    void throw_if_cancelled() const {
      if (p_) p_->throw_if_cancelled();
    }

   private:
    load_progress* p_;
  };

 private:
  void begin(std::string label, int n_items, std::uint64_t n_bytes);
  void end();
  void report(std::stop_token stop);
  std::string line() const;

  std::FILE* terminal_;
  std::stop_token stop_;
  // The step in progress; written by begin() before the reporter starts.
  std::string label_;
  int n_items_ = 0;
  std::uint64_t n_bytes_ = 0;
  std::chrono::steady_clock::time_point began_;
  std::atomic<int> items_done_{0};
  std::atomic<std::uint64_t> bytes_done_{0};
  bool drawn_ = false;  // a line is on the terminal (reporter thread, then end() after the join)
  std::mutex mu_;
  std::condition_variable_any wake_;
  std::jthread reporter_;
};

}  // namespace pagedserve
