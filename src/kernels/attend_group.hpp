#pragma once
// One query row's online-softmax step over one aligned group of K/V blocks (kernel_table::attend_group),
// written once over a table's own dot and axpy (which widen fp16 and int8 K/V exactly as they read
// it); the scalar and AVX2 tables use it as is, the AVX-512 table for head sizes it has no
// register-resident variant of. Likewise attend_group_rows as a loop of a table's attend_group.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kv_prefetch_stream.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {

// Walks the rows j0, j0 + 1, ... of a group's blocks without a division per row.
struct kv_group_cursor {
  int block, slot;
  kv_group_cursor(const kv_group& g, int j) : block(j / g.block_size), slot(j % g.block_size) {}
  void next(const kv_group& g) {
    if (++slot == g.block_size) slot = 0, ++block;
  }
  template <class KV>
  const KV* row(const void* const* runs, int head_size) const {
    return static_cast<const KV*>(runs[block]) + static_cast<std::size_t>(slot) * head_size;
  }
};

template <class KV, auto dot, auto axpy>
void attend_group_generic(float* acc, float* row_max, float* row_sum, const float* q, const kv_group& g, int j0, int n,
                          int head_size, float scale, float* scores) {
  constexpr bool scaled = std::is_same_v<KV, std::int8_t>;  // the q8 cache: one scale per row
  const std::size_t row_bytes = kv_group_row_bytes(g, head_size);
  float group_max = -INFINITY;
  kv_group_cursor at(g, j0);
  for (int j = j0; j < n; ++j, at.next(g)) {
    if (g.ahead) g.ahead->advance(row_bytes);
    float s = dot(q, at.row<KV>(g.k, head_size), head_size);
    if constexpr (scaled) s *= g.k_scales[at.block][at.slot];
    scores[j] = s * scale;
    group_max = std::max(group_max, scores[j]);
  }
  const float new_max = std::max(*row_max, group_max);
  if (new_max > *row_max) {
    const float rescale = std::exp(*row_max - new_max);  // 0 for the first group
    *row_sum *= rescale;
    for (int i = 0; i < head_size; ++i) acc[i] *= rescale;
    *row_max = new_max;
  }
  at = kv_group_cursor(g, j0);
  for (int j = j0; j < n; ++j, at.next(g)) {
    if (g.ahead) g.ahead->advance(row_bytes);
    const float w = std::exp(scores[j] - new_max);
    *row_sum += w;
    if constexpr (scaled)
      axpy(acc, w * g.v_scales[at.block][at.slot], at.row<KV>(g.v, head_size), head_size);
    else
      axpy(acc, w, at.row<KV>(g.v, head_size), head_size);
  }
}

// kernel_table::attend_group_rows as one attend_group per row: the same bits by construction. The last
// row (a tile's last token, which reads the most keys) advances the prefetch stream.
template <auto attend_group>
void attend_group_rows_each(const attend_row* rows, int n_rows, const kv_group& g, int head_size, float scale,
                            float* scores) {
  kv_group own = g;
  for (int r = 0; r < n_rows; ++r) {
    own.ahead = r == n_rows - 1 ? g.ahead : nullptr;
    const attend_row& row = rows[r];
    attend_group(row.acc, row.max, row.sum, row.q, own, row.j0, row.n, head_size, scale, scores);
  }
}

// kernel_table::attend_heads as one attend_group per row over its own group, each advancing the one
// prefetch stream (groups[0].ahead) by what it reads.
template <auto attend_group>
void attend_heads_each(const attend_row* rows, const kv_group* groups, int n_rows, int head_size, float scale,
                       float* scores) {
  for (int r = 0; r < n_rows; ++r) {
    kv_group own = groups[r];
    own.ahead = groups[0].ahead;
    const attend_row& row = rows[r];
    attend_group(row.acc, row.max, row.sum, row.q, own, row.j0, row.n, head_size, scale, scores);
  }
}

}  // namespace pagedserve::kernels
