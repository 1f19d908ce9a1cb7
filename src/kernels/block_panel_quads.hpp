#pragma once
// The loop over row panels of the K-quants whose kernels run one quad (4 rows) at a time, their quads
// one after the other in a panel (q5_k; block_panel_q4_k.hpp has q4_k's own): every quad touching
// [o_begin, o_end), up to 4 tokens per kernel call, the rows in the range stored. Included by the
// avx512_vnni file only.
#include <algorithm>
#include <cstddef>

#include "model/ggml_block_panels.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

// sums[t * 16 + 4 quad + i] = row 4 quad + i of the panel · token t's activations (t < n_t, n_t being
// the kernel's place in its table + 1).
using quad_dot_fn = void (*)(float* sums, const std::byte* panel, int quad, const std::byte* y0, std::size_t y_stride,
                             int nb);
constexpr int quad_dot_tokens = 4;

// kernel_table::matmul_blocks for a panel-packed 256-weight block matrix w of quad blocks of
// quad_bytes, with kernels[n - 1] taking n tokens.
inline void matmul_quad_panels(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end,
                               std::size_t quad_bytes, const quad_dot_fn (&kernels)[quad_dot_tokens]) {
  constexpr int n_quads = block_panel_rows / block_panel_quad;
  const std::size_t x_bytes = activation_row_bytes(w.type, w.cols);
  const int nb = w.cols / 256;
  const std::size_t panel_bytes = static_cast<std::size_t>(nb) * n_quads * quad_bytes;
  for (int p = o_begin / block_panel_rows; p * block_panel_rows < o_end; ++p) {
    const int first = p * block_panel_rows;
    const std::byte* panel = static_cast<const std::byte*>(w.data) + p * panel_bytes;
    for (int quad = 0; quad < n_quads; ++quad) {
      const int q_first = first + quad * block_panel_quad;
      const int r_begin = std::max(o_begin, q_first), r_end = std::min(o_end, q_first + block_panel_quad);
      if (r_begin >= r_end) continue;
      for (int t = 0; t < n_tokens; t += quad_dot_tokens) {
        const int n_t = std::min(quad_dot_tokens, n_tokens - t);
        float sums[quad_dot_tokens * block_panel_rows];
        kernels[n_t - 1](sums, panel, quad, xq + t * x_bytes, x_bytes, nb);
        for (int i = 0; i < n_t; ++i)
          for (int r = r_begin; r < r_end; ++r)
            out[static_cast<std::size_t>(t + i) * w.rows + r] = sums[i * block_panel_rows + r - first];
      }
    }
  }
}

}  // namespace
}  // namespace pagedserve::kernels
