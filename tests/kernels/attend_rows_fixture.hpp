#pragma once
// What the attend_group_rows and attend_heads tests share: two groups of kv_group_blocks shuffled blocks
// of random K/V, each row's accumulator, max and sum compared bit for bit, and the causal key ranges of
// a tile's rows as paged attention lists them.
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "kernels/kernel_test_support.hpp"
#include "kv/kv_cache.hpp"

namespace pagedserve::kernels {

constexpr int attend_test_block_size = 16;

// Two groups of kv_group_blocks blocks of n_kv_heads kv heads, random keys and values, blocks shuffled:
// groups[gi][h] is kv head h's group.
struct two_groups_of_heads {
  kv_cache cache;
  std::vector<kv_group> groups[2];

  two_groups_of_heads(int n_kv_heads, int head_size, dtype type, std::mt19937& rng)
      : cache(1, 2 * kv_group_blocks + 3, attend_test_block_size, n_kv_heads, head_size, type) {
    constexpr int bs = attend_test_block_size;
    std::vector<int> blocks(cache.n_blocks());
    std::iota(blocks.begin(), blocks.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), rng);
    const paged_kv_layer kv = cache.layer(0);
    const std::size_t elem = dtype_size(type);
    for (int gi = 0; gi < 2; ++gi) {
      groups[gi].resize(n_kv_heads);
      for (int b = 0; b < kv_group_blocks; ++b) {
        const int block = blocks[gi * kv_group_blocks + b];
        for (int s = 0; s < bs; ++s) {
          const auto k = random_vector(static_cast<std::size_t>(n_kv_heads) * head_size, rng, -3.0f, 3.0f);
          const auto v = random_vector(static_cast<std::size_t>(n_kv_heads) * head_size, rng);
          cache.store(*kernel_table_select(), 0, block * bs + s, k.data(), v.data());
        }
        for (int h = 0; h < n_kv_heads; ++h) {
          kv_group& g = groups[gi][h];
          g.block_size = bs, g.type = type;
          const std::size_t off = block * kv.block_stride + kv.head_offset(h, 0);  // elements
          g.k[b] = static_cast<const std::byte*>(kv.k_base) + off * elem;
          g.v[b] = static_cast<const std::byte*>(kv.v_base) + off * elem;
          if (type == dtype::i8) g.k_scales[b] = kv.k_scales + off / head_size, g.v_scales[b] = kv.v_scales + off / head_size;
        }
      }
    }
  }
};

// Per-row state of one attention row: accumulator, running max and sum.
struct row_states {
  std::vector<float> acc, max, sum;
  row_states(int n_rows, int head_size)
      : acc(static_cast<std::size_t>(n_rows) * head_size, 0.0f), max(n_rows, -INFINITY), sum(n_rows, 0.0f) {}
  bool operator==(const row_states& o) const {
    auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    return same(acc, o.acc) && same(max, o.max) && same(sum, o.sum);
  }
};

// The rows of `n_tokens` consecutive tokens times `per_token` heads, as paged attention lists them: token
// t (0-based) sees keys up to last_n - (n_tokens - 1 - t), from its window's start when window > 0.
inline std::vector<std::pair<int, int>> causal_ranges(int per_token, int n_tokens, int last_n, int window) {
  std::vector<std::pair<int, int>> ranges;
  for (int t = 0; t < n_tokens; ++t)
    for (int h = 0; h < per_token; ++h) {
      const int n = std::max(1, last_n - (n_tokens - 1 - t));
      ranges.emplace_back(window > 0 ? std::max(0, n - window) : 0, n);
    }
  return ranges;
}

}  // namespace pagedserve::kernels
