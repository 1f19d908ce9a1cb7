#pragma once
// The engine's figures at one moment, as /health and /metrics report them: the scheduler's queues,
// the KV pool, the executor's time. Read on each actor's own strand and gathered by the engine.
#include <cstdint>

namespace pagedserve {

struct scheduler_status {
  int running = 0;
  int waiting = 0;
  std::uint64_t preemptions = 0;
  std::uint64_t steps = 0;
};
struct kv_pool_status {
  int blocks_total = 0;
  int blocks_free = 0;
  int blocks_cached = 0;               // free or used blocks reusable by the prefix cache
  int block_size = 0;
  int sequences = 0;
  std::uint64_t prefix_cache_queries = 0;  // prompt tokens looked up
  std::uint64_t prefix_cache_hits = 0;     // of which found in the cache
  std::uint64_t forks = 0;                 // samples that shared another's prompt blocks
  std::uint64_t block_copies = 0;          // copy-on-write block copies
};
struct executor_status {
  double busy_seconds = 0;  // computing steps
  double gap_seconds = 0;   // idle between back-to-back steps (scheduling turnaround)
};
struct engine_status {
  scheduler_status scheduler;
  kv_pool_status kv;
  executor_status executor;
};

}  // namespace pagedserve
