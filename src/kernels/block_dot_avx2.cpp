// kernel_table::matmul_blocks for the avx2 table(s): block_dot_simd.hpp compiled with this file's flags,
// and the row panels of the types block_panels_avx2 lists (block_panel_matmul_avx2.hpp).
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC PR 105593, as in table_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "block_dot_simd.hpp"
#include "block_panel_matmul_avx2.hpp"

namespace pagedserve::kernels {

void detail::matmul_blocks_avx2(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin,
                                int o_end) {
  if (matmul_panels_avx2_any(out, xq, w, n_tokens, o_begin, o_end)) return;
  matmul_blocks_simd(out, xq, w, n_tokens, o_begin, o_end, simd_kernels(w.type));
}

}  // namespace pagedserve::kernels
