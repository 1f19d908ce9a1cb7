// kernel_table::matmul_blocks for the avx512_vnni table(s): block_dot_simd.hpp compiled with this file's
// flags, with the K-quants on zmm (block_dot_zmm.hpp)
// and the row panels of q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl (block_panel_q4_0.hpp), q2_k
// (block_panel_q23_k.hpp), q4_k and q5_k (block_panel_q4_k.hpp), q3_k, q6_k and iq4_xs
// (block_panel_<format>.hpp).
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC PR 105593, as in table_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "block_dot_simd.hpp"
#include "block_dot_zmm.hpp"
#include "block_panel_iq4_xs.hpp"
#include "block_panel_q23_k.hpp"
#include "block_panel_q3_k.hpp"
#include "block_panel_q4_0.hpp"
#include "block_panel_q4_k.hpp"
#include "block_panel_q6_k.hpp"

namespace pagedserve::kernels {

void detail::matmul_blocks_avx512_vnni(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin,
                                int o_end) {
  if (w.panel_rows) {
    switch (w.type) {
      case dtype::q4_0: return matmul_q4_0_panels<panel_q4_0>(out, xq, w, n_tokens, o_begin, o_end);
      case dtype::q4_1: return matmul_q4_0_panels<panel_q4_1>(out, xq, w, n_tokens, o_begin, o_end);
      case dtype::q5_0: return matmul_q4_0_panels<panel_q5_0>(out, xq, w, n_tokens, o_begin, o_end);
      case dtype::q5_1: return matmul_q4_0_panels<panel_q5_1>(out, xq, w, n_tokens, o_begin, o_end);
      case dtype::q8_0: return matmul_q4_0_panels<panel_q8_0>(out, xq, w, n_tokens, o_begin, o_end);
      case dtype::iq4_nl: return matmul_q4_0_panels<panel_iq4_nl>(out, xq, w, n_tokens, o_begin, o_end);
      case dtype::q2_k: return matmul_q23_k_panels<panel_q2_k>(out, xq, w, n_tokens, o_begin, o_end);
      case dtype::q3_k: return matmul_q23_k_panels<panel_q3_k>(out, xq, w, n_tokens, o_begin, o_end);
      case dtype::q4_k: return matmul_q4_k_panels<panel_q4_k>(out, xq, w, n_tokens, o_begin, o_end);
      case dtype::q5_k: return matmul_q4_k_panels<panel_q5_k>(out, xq, w, n_tokens, o_begin, o_end);
      case dtype::q6_k: return matmul_q23_k_panels<panel_q6_k>(out, xq, w, n_tokens, o_begin, o_end);
      case dtype::iq4_xs: return matmul_iq4_xs_panels(out, xq, w, n_tokens, o_begin, o_end);
      default: break;  // no panel layout: block_panels_defined
    }
  }
  matmul_blocks_simd(out, xq, w, n_tokens, o_begin, o_end, zmm_kernels(w.type));
}

}  // namespace pagedserve::kernels
