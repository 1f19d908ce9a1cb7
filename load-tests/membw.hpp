#pragma once
// The machine's memory read bandwidth, measured in the benchmark's own process (perf.md: it flips
// between about 35 and 65 GB/s on this VM, so ratios only mean something against a figure taken in
// the same run). A TBB-parallel sum over a buffer far larger than L3, on every core of the arena,
// best of several passes: what a weight-streaming matmul could reach at most. The buffer is on huge
// pages as the repacked weights are (model/mapped_file.hpp: huge_page_buffer), so the limit is the
// best streaming the machine does, not one slowed by 4 KiB pages' TLB misses.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>

#include "model/mapped_file.hpp"

namespace pagedserve::bench {

// A buffer far larger than L3, written once, whose reads measure the bandwidth: whole (the probe) or
// a slice at a time, each slice after the last, so a short read between a benchmark's steps still
// comes from memory, not from the cache.
class read_probe {
 public:
  explicit read_probe(std::size_t bytes = std::size_t{512} << 20)
      : owner_(pagedserve::huge_page_buffer(bytes)), n_(bytes / sizeof(std::uint64_t)) {
    buf_ = reinterpret_cast<std::uint64_t*>(owner_.get());
    // Written in parallel first, so every page is faulted in (and spread like the reads) before timing.
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n_, chunk), [&](const auto& r) {
      for (std::size_t i = r.begin(); i < r.end(); ++i) buf_[i] = i;
    });
  }

  std::size_t bytes() const { return n_ * sizeof(std::uint64_t); }

  // GB/s (1e9 bytes) of one read of the next `bytes` of the buffer (whole 1 MiB chunks, wrapping).
  double read_gbps(std::size_t bytes) {
    const std::size_t n = std::min(n_, std::max(chunk, bytes / sizeof(std::uint64_t) / chunk * chunk));
    if (next_ + n > n_) next_ = 0;
    const std::size_t begin = next_;
    next_ += n;
    const auto start = std::chrono::steady_clock::now();
    const std::uint64_t sum = tbb::parallel_reduce(
        tbb::blocked_range<std::size_t>(begin, begin + n, chunk), std::uint64_t{0},
        [&](const tbb::blocked_range<std::size_t>& r, std::uint64_t acc) {
          // Four independent sums, so the loop is bound by loads, not by one add chain.
          std::uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
          std::size_t i = r.begin();
          for (; i + 4 <= r.end(); i += 4) s0 += buf_[i], s1 += buf_[i + 1], s2 += buf_[i + 2], s3 += buf_[i + 3];
          for (; i < r.end(); ++i) s0 += buf_[i];
          return acc + s0 + s1 + s2 + s3;
        },
        [](std::uint64_t a, std::uint64_t b) { return a + b; });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::uint64_t first = begin, last = begin + n - 1;  // buf[i] == i: the sum keeps the reads alive
    if (sum != (first + last) * n / 2) return 0.0;
    return static_cast<double>(n * sizeof(std::uint64_t)) / s * 1e-9;
  }

 private:
  static constexpr std::size_t chunk = (1 << 20) / sizeof(std::uint64_t);  // 1 MiB per task
  std::shared_ptr<std::byte> owner_;
  std::uint64_t* buf_ = nullptr;
  std::size_t n_ = 0;
  std::size_t next_ = 0;
};

// GB/s (1e9 bytes) of the best of `passes` full reads of a `bytes` buffer.
inline double read_bandwidth_gbps(std::size_t bytes = std::size_t{512} << 20, int passes = 7) {
  read_probe probe(bytes);
  double best = 0.0;
  for (int p = 0; p < passes; ++p) best = std::max(best, probe.read_gbps(probe.bytes()));
  return best;
}

}  // namespace pagedserve::bench
