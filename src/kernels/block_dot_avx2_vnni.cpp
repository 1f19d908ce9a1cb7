// kernel_table::matmul_blocks for the avx2_vnni table(s): block_dot_simd.hpp compiled with this file's flags.
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC PR 105593, as in table_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "block_dot_simd.hpp"

namespace pagedserve::kernels {

void detail::matmul_blocks_avx2_vnni(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin,
                                int o_end) {
  matmul_blocks_simd(out, xq, w, n_tokens, o_begin, o_end);
}

}  // namespace pagedserve::kernels
