#pragma once
// q6_k over row panels (model/ggml_block_panels.hpp) on zmm with VNNI, one quad (4 rows) at a time as
// block_panel_q4_k.hpp does q4_k. Per super-block half h and k = 0, 1: two 64-byte loads of ql and one
// of qh hold 4 runs of 16 weights of the 4 rows (one row per 128-bit lane: weights 128h + 16k + 32m,
// m = 0..3, low nibbles of ql run 4h + k and 4h + k + 2, then their high nibbles, qh's 2-bit pairs on
// top), each against 16 of the token's activations broadcast to every lane: vpmaddubsw + vpdpwssd with
// the rows' scale of those 16 (s16, one row per lane) sum 4 rows per instruction. The weights go in
// unsigned (0..63); the offset 32 comes off as 32 x the rows' scales . the token's sums per 16, two
// vpmaddwd per token and super-block. fp32: per row, its 4 lanes accumulate acc += float(isum) *
// (d * y.d) super-block after super-block, then (a0 + a1) + (a2 + a3): one sequence whatever the token
// count, tile or row range. Included by the avx512_vnni file only, after block_panel_q4_k.hpp.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>

#include "block_panel_q4_k.hpp"
#include "block_panel_quads.hpp"
#include "model/ggml_block_panels.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

constexpr std::size_t q6_k_quad_bytes = 840;
// Independent vpdpwssd chains per token: 4 for a lone token, 2 for two, 1 from 3 tokens on.
template <int n_t>
constexpr int q6_k_chains = n_t == 1 ? 4 : n_t == 2 ? 2 : 1;

// sums[t * 16 + 4 quad + i] = row 4 quad + i of the panel · token t's activations, t < n_t.
template <int n_t>
void q6_k_quad_dot(float* sums, const std::byte* panel, int quad, const std::byte* y0, std::size_t y_stride, int nb) {
  const act_block256* y[n_t];
  for (int t = 0; t < n_t; ++t) y[t] = reinterpret_cast<const act_block256*>(y0 + t * y_stride);
  __m512 acc[n_t];
  for (int t = 0; t < n_t; ++t) acc[t] = _mm512_setzero_ps();
  const __m512i low4 = _mm512_set1_epi8(0xF), bits45 = _mm512_set1_epi8(0x30);
  const __m512i d_of_lane = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  for (int b = 0; b < nb; ++b) {
    const std::byte* qb = panel + (static_cast<std::size_t>(quad) * nb + b) * q6_k_quad_bytes;
    // Row i's 16 scales in lane i: scales 0..7 and 8..15 as s16 (sign-extended from the high byte).
    const __m512i scales8 = _mm512_loadu_si512(qb + 768);
    const __m512i scales_lo = _mm512_srai_epi16(_mm512_unpacklo_epi8(scales8, scales8), 8);
    const __m512i scales_hi = _mm512_srai_epi16(_mm512_unpackhi_epi8(scales8, scales8), 8);
    const auto scale = [&](int j) { return q4_k_pick(j < 8 ? scales_lo : scales_hi, j % 8); };
    const __m512 d = _mm512_permutexvar_ps(
        d_of_lane, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qb + 832)))));
    // Exact int32 sums, so the chains they split into (latency, not throughput, bounds a lone token)
    // may add in any order.
    __m512i isum[n_t][q6_k_chains<n_t>];
    for (int t = 0; t < n_t; ++t)
      for (int c = 0; c < q6_k_chains<n_t>; ++c) isum[t][c] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {  // r = 2h + k
      const int h = r / 2, k = r % 2;
      const __m512i l1 = _mm512_loadu_si512(qb + 64 * (4 * h + k)), l2 = _mm512_loadu_si512(qb + 64 * (4 * h + k + 2));
      const __m512i hb = _mm512_loadu_si512(qb + 512 + 64 * r);
      const __m512i w[4] = {
          _mm512_or_si512(_mm512_and_si512(l1, low4), _mm512_and_si512(_mm512_slli_epi16(hb, 4), bits45)),
          _mm512_or_si512(_mm512_and_si512(l2, low4), _mm512_and_si512(_mm512_slli_epi16(hb, 2), bits45)),
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), low4), _mm512_and_si512(hb, bits45)),
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l2, 4), low4), _mm512_and_si512(_mm512_srli_epi16(hb, 2), bits45))};
      const __m512i sc[4] = {scale(8 * h + k), scale(8 * h + k + 2), scale(8 * h + k + 4), scale(8 * h + k + 6)};
#pragma GCC unroll 4
      for (int t = 0; t < n_t; ++t) {
        const std::int8_t* a = y[t][b].qs + 128 * h + 16 * k;
#pragma GCC unroll 4
        for (int m = 0; m < 4; ++m)
          isum[t][m % q6_k_chains<n_t>] = _mm512_dpwssd_epi32(
              isum[t][m % q6_k_chains<n_t>], _mm512_maddubs_epi16(w[m], q4_k_broadcast16(a + 32 * m)), sc[m]);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < n_t; ++t) {
      const act_block256& a = y[t][b];
      const __m512i offset = _mm512_dpwssd_epi32(
          _mm512_madd_epi16(scales_lo, _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.bsums)))),
          scales_hi, _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.bsums + 8))));
      __m512i exact = _mm512_sub_epi32(isum[t][0], _mm512_slli_epi32(offset, 5));
      for (int c = 1; c < q6_k_chains<n_t>; ++c) exact = _mm512_add_epi32(exact, isum[t][c]);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), _mm512_mul_ps(d, _mm512_set1_ps(a.d)), acc[t]);
    }
  }
  for (int t = 0; t < n_t; ++t) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc[t]);
    for (int i = 0; i < block_panel_quad; ++i)
      sums[t * block_panel_rows + quad * block_panel_quad + i] =
          (lanes[4 * i] + lanes[4 * i + 1]) + (lanes[4 * i + 2] + lanes[4 * i + 3]);
  }
}

constexpr quad_dot_fn q6_k_quad_kernels[quad_dot_tokens] = {q6_k_quad_dot<1>, q6_k_quad_dot<2>, q6_k_quad_dot<3>,
                                                            q6_k_quad_dot<4>};

inline void matmul_q6_k_panels(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end) {
  matmul_quad_panels(out, xq, w, n_tokens, o_begin, o_end, q6_k_quad_bytes, q6_k_quad_kernels);
}

}  // namespace
}  // namespace pagedserve::kernels
