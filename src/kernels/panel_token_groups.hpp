#pragma once
// The loop every panel matmul (block_panel_*.hpp, zmm and ymm) runs after its per-call token extras:
// every 16-row panel touching [o_begin, o_end), tokens in groups of up to G that share one decode of
// each panel block, all 16 rows computed, those in the range stored. The kernels differ; the loop,
// and with it which rows a call writes, does not.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "model/ggml_block_panels.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {

// sums[t * 16 + r] = row r of the panel at `panel` · token t (t < the kernel's token count), from each
// token's activation blocks y[t] and its extras (offsets, min pairs), over nb blocks.
template <class Act>
using panel_kernel_fn = void (*)(float* sums, const std::byte* panel, const Act* const* y,
                                 const std::int32_t* const* extras, int nb);

// kernels[n - 1] handles n tokens. Token t's activations are at xq + t * x_bytes, its extras at
// extras + t * extras_per_token.
template <class Act, int G>
void store_panel_token_groups(float* out, const weight& w, const std::byte* xq, std::size_t x_bytes,
                              const std::int32_t* extras, std::size_t extras_per_token, std::size_t panel_bytes,
                              int nb, const panel_kernel_fn<Act> (&kernels)[G], int n_tokens, int o_begin, int o_end) {
  for (int p = o_begin / block_panel_rows; p * block_panel_rows < o_end; ++p) {
    const int first = p * block_panel_rows;
    const int r_begin = std::max(o_begin, first) - first, r_end = std::min(o_end, first + block_panel_rows) - first;
    for (int t = 0; t < n_tokens; t += G) {
      const int n_t = std::min(G, n_tokens - t);
      const Act* y[G];
      const std::int32_t* extra[G];
      for (int i = 0; i < n_t; ++i) {
        y[i] = reinterpret_cast<const Act*>(xq + (t + i) * x_bytes);
        extra[i] = extras + (t + i) * extras_per_token;
      }
      float sums[G * block_panel_rows];
      kernels[n_t - 1](sums, static_cast<const std::byte*>(w.data) + p * panel_bytes, y, extra, nb);
      for (int i = 0; i < n_t; ++i)
        for (int r = r_begin; r < r_end; ++r)
          out[static_cast<std::size_t>(t + i) * w.rows + first + r] = sums[i * block_panel_rows + r];
    }
  }
}

}  // namespace pagedserve::kernels
