#pragma once
// The start-up log of a model load: each phase (mapping the files, reading the config and the
// tokenizer, converting the weights, allocating the KV pool) is timed from construction and says
// what it did and how long it took in one info line ("mapped 3 safetensors files, 1.2 GiB in
// 35 ms"), so a slow start-up shows where its time went.
#include <spdlog/fmt/fmt.h>  // callers format their results with fmt::format

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace pagedserve {

class load_phase {
 public:
  using clock = std::chrono::steady_clock;

  // what: the phase in progress ("reading config.json"), named if it never finishes.
  explicit load_phase(std::string_view what);
  // Unfinished (an error returned or a cancelled load unwinding): a debug line only, as the
  // error itself is reported by whoever handles it.
  ~load_phase();
  load_phase(const load_phase&) = delete;
  load_phase& operator=(const load_phase&) = delete;

  // Logs "<result> in <elapsed>" at info level; later calls do nothing.
  void finish(std::string_view result);
  clock::duration elapsed() const { return clock::now() - start_; }

 private:
  std::string what_;
  clock::time_point start_;
  bool finished_ = false;
};

// "812 B", "4.0 KiB", "1.2 GiB": binary units, as `free -h` and llama.cpp's load log.
std::string bytes_text(std::uint64_t bytes);
// "0.04 ms", "35 ms", "2.1 s", "3 min 12 s".
std::string duration_text(std::chrono::steady_clock::duration d);

}  // namespace pagedserve
