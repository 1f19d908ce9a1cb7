#pragma once
// q5_k over row panels (model/ggml_block_panels.hpp) on zmm with VNNI: block_panel_q4_k.hpp's kernel
// with the fifth bit. Its quad block is q4_k's plus the 4 rows' qh (first 16 bytes, last 16, one row
// per 128-bit lane); bit 2c (2c + 1) of qh[l] adds 16 to weight l of sub-block 2c (2c + 1), one
// vptestmb and one masked add per 64 weight bytes, before the same vpmaddubsw + vpdpwssd against the
// rows' sub-block scales and the same vpmaddwd of mins and the token's sums per 32. fp32: per row, its
// 4 lanes accumulate acc += float(isum) * (d * y.d) and acc_min += float(imin) * (dmin * y.d), then
// (a0 + a1) + (a2 + a3) of acc - acc_min: one sequence whatever the token count, tile or row range.
// Included by the avx512_vnni file only.
#include <immintrin.h>

#include <cstddef>

#include "block_panel_q4_k.hpp"
#include "block_panel_quads.hpp"
#include "model/ggml_block_panels.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

constexpr std::size_t q5_k_quad_bytes = 704;

// weights + 16 where `qh` has bit `bit` set, byte by byte.
inline __m512i q5_k_fifth_bit(__m512i weights, __m512i qh, int bit) {
  const __mmask64 set = _mm512_test_epi8_mask(qh, _mm512_set1_epi8(static_cast<char>(1 << bit)));
  return _mm512_mask_add_epi8(weights, set, weights, _mm512_set1_epi8(16));
}

template <int n_t>
void q5_k_quad_dot(float* sums, const std::byte* panel, int quad, const std::byte* y0, std::size_t y_stride, int nb) {
  const act_block256* y[n_t];
  for (int t = 0; t < n_t; ++t) y[t] = reinterpret_cast<const act_block256*>(y0 + t * y_stride);
  __m512 acc[n_t], acc_min[n_t];
  for (int t = 0; t < n_t; ++t) acc[t] = acc_min[t] = _mm512_setzero_ps();
  const __m512i low4 = _mm512_set1_epi8(0xF);
  const __m512i d_of_lane = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  for (int b = 0; b < nb; ++b) {
    const std::byte* qb = panel + (static_cast<std::size_t>(quad) * nb + b) * q5_k_quad_bytes;
    const auto load16 = [&](int at) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(qb + at)); };
    const __m512i scales16 = q4_k_values16(load16(16), load16(48), 0);
    const __m512i mins16 = q4_k_values16(load16(32), load16(48), 4);
    const auto widen_d = [&](int at) {
      return _mm512_permutexvar_ps(
          d_of_lane, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qb + at)))));
    };
    const __m512 d = widen_d(0), dmin = widen_d(8);
    const __m512i qh_first = _mm512_loadu_si512(qb + 576), qh_last = _mm512_loadu_si512(qb + 640);
    // Exact int32 sums: the even and odd sub-blocks' chains (latency bounds a lone token) add in any order.
    __m512i isum[n_t], isum_odd[n_t];
    for (int t = 0; t < n_t; ++t) isum[t] = isum_odd[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m512i first = _mm512_loadu_si512(qb + 64 + 128 * c), last = _mm512_loadu_si512(qb + 128 + 128 * c);
      const __m512i lo_first = q5_k_fifth_bit(_mm512_and_si512(first, low4), qh_first, 2 * c);
      const __m512i lo_last = q5_k_fifth_bit(_mm512_and_si512(last, low4), qh_last, 2 * c);
      const __m512i hi_first = q5_k_fifth_bit(_mm512_and_si512(_mm512_srli_epi16(first, 4), low4), qh_first, 2 * c + 1);
      const __m512i hi_last = q5_k_fifth_bit(_mm512_and_si512(_mm512_srli_epi16(last, 4), low4), qh_last, 2 * c + 1);
      const __m512i scale_even = q4_k_pick(scales16, 2 * c), scale_odd = q4_k_pick(scales16, 2 * c + 1);
#pragma GCC unroll 4
      for (int t = 0; t < n_t; ++t) {
        const std::int8_t* a = y[t][b].qs + 64 * c;
        const __m512i even = _mm512_add_epi16(_mm512_maddubs_epi16(lo_first, q4_k_broadcast16(a)),
                                              _mm512_maddubs_epi16(lo_last, q4_k_broadcast16(a + 16)));
        const __m512i odd = _mm512_add_epi16(_mm512_maddubs_epi16(hi_first, q4_k_broadcast16(a + 32)),
                                             _mm512_maddubs_epi16(hi_last, q4_k_broadcast16(a + 48)));
        isum[t] = _mm512_dpwssd_epi32(isum[t], even, scale_even);
        isum_odd[t] = _mm512_dpwssd_epi32(isum_odd[t], odd, scale_odd);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < n_t; ++t) {
      const act_block256& a = y[t][b];
      const __m256i pairs = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums)),
                                              _mm256_set1_epi16(1));
      const __m512i bsums32 = _mm512_broadcast_i32x4(_mm256_cvtepi32_epi16(pairs));
      const __m512i imin = _mm512_madd_epi16(mins16, bsums32);
      const __m512 yd = _mm512_set1_ps(a.d);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(isum[t], isum_odd[t])), _mm512_mul_ps(d, yd), acc[t]);
      acc_min[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(imin), _mm512_mul_ps(dmin, yd), acc_min[t]);
    }
  }
  for (int t = 0; t < n_t; ++t) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, _mm512_sub_ps(acc[t], acc_min[t]));
    for (int i = 0; i < block_panel_quad; ++i)
      sums[t * block_panel_rows + quad * block_panel_quad + i] =
          (lanes[4 * i] + lanes[4 * i + 1]) + (lanes[4 * i + 2] + lanes[4 * i + 3]);
  }
}

constexpr quad_dot_fn q5_k_quad_kernels[quad_dot_tokens] = {q5_k_quad_dot<1>, q5_k_quad_dot<2>, q5_k_quad_dot<3>,
                                                            q5_k_quad_dot<4>};

inline void matmul_q5_k_panels(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end) {
  matmul_quad_panels(out, xq, w, n_tokens, o_begin, o_end, q5_k_quad_bytes, q5_k_quad_kernels);
}

}  // namespace
}  // namespace pagedserve::kernels
