#pragma once
// The avx2 / avx2_vnni tables' matmul_blocks over panel-packed weights: the types block_panels_avx2
// lists, each on its ymm panel kernel (block_panel_<format>_avx2.hpp). One source for both tables: the
// avx2_vnni file compiles the same vpmaddubsw kernels (its integer sums are the same; not runnable on a
// CPU without AVX-VNNI, so kept identical rather than separately tuned).
#include "block_kernels.hpp"
#include "block_panel_iq4_xs_avx2.hpp"
#include "block_panel_q2_k_avx2.hpp"
#include "block_panel_q3_k_avx2.hpp"
#include "block_panel_q4_0_avx2.hpp"
#include "block_panel_q4_k_avx2.hpp"
#include "block_panel_q6_k_avx2.hpp"

namespace pagedserve::kernels {
namespace {

// Computes out for a panel-packed w whose type has an avx2 panel kernel and returns true; false for
// any other w (the caller's row kernels then read it).
inline bool matmul_panels_avx2_any(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin,
                                   int o_end) {
  if (!w.panel_rows || !detail::block_panels_avx2(w.type)) return false;
  switch (w.type) {
    case dtype::q4_0: matmul_panels_avx2<panel_q4_0_avx2>(out, xq, w, n_tokens, o_begin, o_end); break;
    case dtype::q4_1: matmul_panels_avx2<panel_q4_1_avx2>(out, xq, w, n_tokens, o_begin, o_end); break;
    case dtype::q5_0: matmul_panels_avx2<panel_q5_0_avx2>(out, xq, w, n_tokens, o_begin, o_end); break;
    case dtype::q5_1: matmul_panels_avx2<panel_q5_1_avx2>(out, xq, w, n_tokens, o_begin, o_end); break;
    case dtype::q8_0: matmul_panels_avx2<panel_q8_0_avx2>(out, xq, w, n_tokens, o_begin, o_end); break;
    case dtype::iq4_nl: matmul_panels_avx2<panel_iq4_nl_avx2>(out, xq, w, n_tokens, o_begin, o_end); break;
    case dtype::q2_k: matmul_panels_avx2<panel_q2_k_avx2>(out, xq, w, n_tokens, o_begin, o_end); break;
    case dtype::q3_k: matmul_panels_avx2<panel_q3_k_avx2>(out, xq, w, n_tokens, o_begin, o_end); break;
    case dtype::q4_k: matmul_panels_avx2<panel_q4_k_avx2>(out, xq, w, n_tokens, o_begin, o_end); break;
    case dtype::q5_k: matmul_panels_avx2<panel_q5_k_avx2>(out, xq, w, n_tokens, o_begin, o_end); break;
    case dtype::q6_k: matmul_panels_avx2<panel_q6_k_avx2>(out, xq, w, n_tokens, o_begin, o_end); break;
    case dtype::iq4_xs: matmul_panels_avx2<panel_iq4_xs_avx2>(out, xq, w, n_tokens, o_begin, o_end); break;
    default: return false;
  }
  return true;
}

}  // namespace
}  // namespace pagedserve::kernels
