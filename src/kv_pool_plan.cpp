#include "kv_pool_plan.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "config/byte_size.hpp"
#include "model/load_phase.hpp"

namespace pagedserve {
namespace {

int blocks_in(std::uint64_t bytes, std::uint64_t bytes_per_block) {
  return static_cast<int>(std::min<std::uint64_t>(bytes / bytes_per_block, std::numeric_limits<int>::max()));
}

}  // namespace

std::expected<kv_pool_plan, std::string> kv_pool_plan_make(const engine_config& e, std::uint64_t bytes_per_token,
                                                           int context_len, std::uint64_t mem_available) {
  if (e.kv_blocks > 0) return kv_pool_plan{e.kv_blocks, "--kv-blocks (or -c, or the config file)"};
  const std::uint64_t bytes_per_block = bytes_per_token * static_cast<std::uint64_t>(e.block_size);
  if (e.kv_cache_memory != "auto") {
    auto bytes = byte_size_parse(e.kv_cache_memory);
    if (!bytes) return std::unexpected("--kv-cache-memory: " + bytes.error());
    const int blocks = blocks_in(*bytes, bytes_per_block);
    if (blocks < 1)
      return std::unexpected(fmt::format("--kv-cache-memory {} holds no KV block of this model ({} each)",
                                         e.kv_cache_memory, bytes_text(bytes_per_block)));
    return kv_pool_plan{blocks, fmt::format("--kv-cache-memory {}", e.kv_cache_memory)};
  }
  const std::uint64_t full_tokens = static_cast<std::uint64_t>(e.max_num_seqs) * static_cast<std::uint64_t>(context_len);
  const int full = blocks_in(full_tokens * bytes_per_token + bytes_per_block - 1, bytes_per_block);
  if (mem_available == 0)
    return kv_pool_plan{std::max(full, 1), fmt::format("auto: {} sequences x {} tokens (free memory unknown)",
                                                       e.max_num_seqs, context_len)};
  const int share = blocks_in(mem_available / 4, bytes_per_block);
  if (full <= share)
    return kv_pool_plan{std::max(full, 1), fmt::format("auto: {} sequences x {} tokens, within a quarter of the {} free",
                                                       e.max_num_seqs, context_len, bytes_text(mem_available))};
  return kv_pool_plan{std::max(share, 1), fmt::format("auto: a quarter of the {} free ({} sequences x {} tokens would "
                                                      "need {}); set --kv-cache-memory or --kv-blocks to change it",
                                                      bytes_text(mem_available), e.max_num_seqs, context_len,
                                                      bytes_text(full_tokens * bytes_per_token))};
}

std::uint64_t mem_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream in(line.substr(13));
    std::uint64_t kib = 0;
    in >> kib;
    return kib * 1024;
  }
  return 0;
}

}  // namespace pagedserve
