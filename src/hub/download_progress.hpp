#pragma once
// Shows a file download's progress: on a terminal, one bar per file redrawn in place with '\r'
// (bytes done/total, rate, ETA); elsewhere (logs, CI, a pipe), a plain line every few seconds and
// one at the end, so a log file holds no control characters and no flood of updates.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace pagedserve {

// "512 B", "1.5 kB", "12.3 MB", "4.02 GB" (decimal units, as huggingface_hub's tqdm bars).
std::string progress_bytes(std::uint64_t n);
// "42s", "3m05s", "1h02m"
std::string progress_duration(std::chrono::seconds s);

class download_progress {
 public:
  using clock = std::chrono::steady_clock;
  struct options {
    bool tty = false;                                     // draw a bar (else log lines)
    std::chrono::milliseconds redraw_every{100};          // tty: at most this often
    std::chrono::milliseconds log_every{5000};            // not a tty: a line this often
    std::function<void(std::string_view)> write;          // tty: raw text to the terminal
    std::function<void(const std::string&)> log;          // not a tty: one log line
  };

  explicit download_progress(options o) : o_(std::move(o)) {}
  // For the program: a bar when stderr is a terminal, else spdlog info lines.
  static download_progress for_stderr();

  // A new file: `total` bytes (0 = unknown), of which `done` are already on disk (a resumed file).
  void start(std::string name, std::uint64_t total, std::uint64_t done, clock::time_point now = clock::now());
  // `n` more bytes arrived.
  void advance(std::uint64_t n, clock::time_point now = clock::now());
  // The file is complete (or failed): the final bar and its newline, or the closing log line.
  void finish(clock::time_point now = clock::now());
  // Back to the start of the file (the server ignored a Range request).
  void restart(clock::time_point now = clock::now());

  // The status text: "name  12.3 MB/45.6 MB  27%  3.2 MB/s  ETA 10s".
  std::string status(clock::time_point now) const;

 private:
  void draw(clock::time_point now, bool final);

  options o_;
  std::string name_;
  std::uint64_t total_ = 0, done_ = 0, resumed_from_ = 0;
  std::uint64_t shown_done_ = ~std::uint64_t{0};  // done_ as last drawn
  clock::time_point started_{}, last_shown_{};
  bool active_ = false;
  std::size_t last_width_ = 0;  // tty: the longest line drawn, padded over when shorter ones follow
};

}  // namespace pagedserve
