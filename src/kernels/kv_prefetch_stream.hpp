#pragma once
// The K/V bytes one thread of paged attention will read next, in the order it reads them, prefetched
// a fixed distance ahead of what it has computed (kv_group::ahead). Each (block, kv head) run is a few
// KB scattered through the pool: a burst of prefetches for a whole next group (a thread's first group
// not at all) leaves the core waiting on misses, while a steady stream that crosses groups and work
// items keeps a constant number of lines in flight. Prefetching never changes what is computed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {

struct kv_prefetch_stream {
  // One contiguous run of K, V or q8 scales, in the order the kernels read them.
  struct run {
    const std::byte* begin;
    std::uint32_t bytes;
  };
  // Lines kept in flight ahead of the reads: enough to cover memory latency at one core's bandwidth.
  static constexpr std::size_t distance_bytes = 16 * 1024;

  // The runs listed and not yet fully asked for from runs[next_run] on, appended a work item or two
  // ahead (list()) so a long prefill range never holds all its runs at once; per thread, reused.
  std::vector<run> runs;
  std::size_t next_run = 0;
  std::uint32_t next_offset = 0;  // bytes of runs[next_run] already asked for
  std::size_t listed = 0;         // bytes of all runs appended since restart()
  std::size_t issued = 0;         // bytes asked for so far
  std::size_t consumed = 0;       // bytes the kernels reported read

  void restart() { runs.clear(), next_run = 0, next_offset = 0, listed = 0, issued = 0, consumed = 0; }
  void list(const run& r) { runs.push_back(r), listed += r.bytes; }
  // Whether fewer than twice the distance of listed bytes lie ahead of the reads.
  bool wants_more() const { return listed < consumed + 2 * distance_bytes; }
  // Forgets the runs already asked for (the counts stay cumulative).
  void drop_asked() {
    runs.erase(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(next_run));
    next_run = 0;
  }
  // The kernels read `bytes` more of the stream: keep distance_bytes asked for beyond that.
  void advance(std::size_t bytes) {
    consumed += bytes;
    while (issued < consumed + distance_bytes && next_run < runs.size()) {
      const run& r = runs[next_run];
      __builtin_prefetch(r.begin + next_offset, 0, 2);  // into L2: the group is read again for each row
      const std::uint32_t step = std::min<std::uint32_t>(64, r.bytes - next_offset);
      issued += step;
      if ((next_offset += step) >= r.bytes) next_offset = 0, ++next_run;
    }
  }
};

// What a kernel reads of a kv_group per key row (the row and, for int8, its scale): the unit of advance().
inline std::size_t kv_group_row_bytes(const kv_group& g, int head_size) {
  return static_cast<std::size_t>(head_size) * dtype_size(g.type) + (g.type == dtype::i8 ? sizeof(float) : 0);
}

}  // namespace pagedserve::kernels
