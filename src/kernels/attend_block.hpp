#pragma once
// One query row's online-softmax step over one K/V block (kernel_table::attend_block and, with KV =
// uint16_t, attend_block_f16), written once over a table's own dot and axpy (which widen fp16 K/V
// exactly as they read it); the scalar and AVX2 tables use it as is, the AVX-512 table for head sizes
// it has no register-resident variant of.
#include <algorithm>
#include <cmath>
#include <cstddef>

namespace pagedserve::kernels {

template <class KV, auto dot, auto axpy>
void attend_block_generic(float* acc, float* row_max, float* row_sum, const float* q, const KV* k, const KV* v,
                          int j0, int n, int head_size, float scale, float* scores) {
  float block_max = -INFINITY;
  for (int j = j0; j < n; ++j) {
    scores[j] = dot(q, k + static_cast<std::size_t>(j) * head_size, head_size) * scale;
    block_max = std::max(block_max, scores[j]);
  }
  const float new_max = std::max(*row_max, block_max);
  if (new_max > *row_max) {
    const float rescale = std::exp(*row_max - new_max);  // 0 for the first block
    *row_sum *= rescale;
    for (int i = 0; i < head_size; ++i) acc[i] *= rescale;
    *row_max = new_max;
  }
  for (int j = j0; j < n; ++j) {
    const float w = std::exp(scores[j] - new_max);
    *row_sum += w;
    axpy(acc, w, v + static_cast<std::size_t>(j) * head_size, head_size);
  }
}

}  // namespace pagedserve::kernels
