#pragma once
// How many KV blocks `serve` and `generate` allocate when the config leaves engine.kv_blocks at 0:
// from engine.kv_cache_memory, a size or "auto". The rule for auto: what max_num_seqs sequences of
// the full context can ever hold, but at most a quarter of the memory the kernel reports available
// (MemAvailable) when the server starts, and at least one block. The weights are already loaded then,
// so that memory is what is left beside them; the quarter leaves the rest to the OS, the page cache and
// whatever else runs on the machine (vLLM's --gpu-memory-utilization is 0.9 of a GPU the server owns; a
// CPU server shares its machine).
#include <cstdint>
#include <expected>
#include <string>

#include "pagedserve/config.hpp"

namespace pagedserve {

struct kv_pool_plan {
  int blocks = 0;
  std::string why;  // one line for the log: the rule that gave this size
};

// bytes_per_token: KV bytes one token takes in every layer; context_len: the longest sequence in
// tokens; mem_available: bytes free for the pool (0 = unknown). An explicit kv_blocks is taken as it is.
std::expected<kv_pool_plan, std::string> kv_pool_plan_make(const engine_config& e, std::uint64_t bytes_per_token,
                                                           int context_len, std::uint64_t mem_available);

// MemAvailable of /proc/meminfo in bytes, 0 when it cannot be read.
std::uint64_t mem_available_bytes();

}  // namespace pagedserve
