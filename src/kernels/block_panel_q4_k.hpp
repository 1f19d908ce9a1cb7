#pragma once
// q4_k over row panels (model/ggml_block_panels.hpp) on zmm with VNNI. One quad (4 rows) at a time, its
// super-blocks in order: per 32 bytes of nibbles (sub-blocks 2c, 2c + 1) two 64-byte loads hold the 4
// rows' weights, one row per 128-bit lane, against the token's activations broadcast to every lane;
// vpmaddubsw + vpdpwssd with the rows' sub-block scales (s16, one row per lane) sum 4 rows per
// instruction where the row kernels (block_dot_zmm.hpp) sum one. The 6-bit scales and mins of the 4
// rows unpack together (k4_scales_mins' arithmetic on 4 rows at once), and the mins meet the token's
// sums per 32 activations in one vpmaddwd. fp32: per row, its 4 lanes accumulate
// acc += float(isum) * (d * y.d) and acc_min += float(imin) * (dmin * y.d) super-block after super-block,
// then (a0 + a1) + (a2 + a3) of acc - acc_min: one sequence whatever the token count, tile or row range.
// Included by the avx512_vnni file only.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>

#include "model/ggml_block_panels.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int q4_k_panel_quads = block_panel_rows / block_panel_quad;
constexpr std::size_t q4_k_quad_bytes = 576;
constexpr int q4_k_panel_tokens = 4;

// The s16 vector with element j of every 128-bit lane in all of that lane's 8 elements.
inline __m512i q4_k_pick(const __m512i& s16, int j) {
  return _mm512_shuffle_epi8(s16, _mm512_set1_epi16(static_cast<short>((2 * j + 1) << 8 | 2 * j)));
}

// 4 rows' 8 6-bit values (scales, or mins) as s16, row r's in 128-bit lane r: `low` holds each row's
// bytes 0-3 (or 4-7) of the packed 12, `high` bytes 8-11, a row per 32-bit element; nibble_shift picks
// the low (scales) or high (mins) nibbles of bytes 8-11.
inline __m512i q4_k_values16(__m128i low, __m128i high, int nibble_shift) {
  const __m128i low6 = _mm_set1_epi8(0x3f), nib = _mm_set1_epi8(0xF), top2 = _mm_set1_epi8(0x30);
  const __m128i v0_3 = _mm_and_si128(low, low6);
  const __m128i v4_7 = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(high, nibble_shift), nib),
                                    _mm_and_si128(_mm_srli_epi16(low, 2), top2));
  const __m256i rows = _mm256_set_m128i(_mm_unpackhi_epi32(v0_3, v4_7), _mm_unpacklo_epi32(v0_3, v4_7));
  return _mm512_cvtepu8_epi16(rows);
}

inline __m512i q4_k_broadcast16(const std::int8_t* p) {
  return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// sums[t * 16 + 4 quad + i] = row 4 quad + i of the panel · token t's activations, t < n_t.
template <int n_t>
void q4_k_quad_dot(float* sums, const std::byte* panel, int quad, const std::byte* y0, std::size_t y_stride, int nb) {
  const act_block256* y[n_t];
  for (int t = 0; t < n_t; ++t) y[t] = reinterpret_cast<const act_block256*>(y0 + t * y_stride);
  __m512 acc[n_t], acc_min[n_t];
  for (int t = 0; t < n_t; ++t) acc[t] = acc_min[t] = _mm512_setzero_ps();
  const __m512i low4 = _mm512_set1_epi8(0xF);
  const __m512i d_of_lane = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  for (int b = 0; b < nb; ++b) {
    const std::byte* qb = panel + (static_cast<std::size_t>(quad) * nb + b) * q4_k_quad_bytes;
    const auto load16 = [&](int at) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(qb + at)); };
    const __m512i scales16 = q4_k_values16(load16(16), load16(48), 0);
    const __m512i mins16 = q4_k_values16(load16(32), load16(48), 4);
    const auto widen_d = [&](int at) {
      return _mm512_permutexvar_ps(
          d_of_lane, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qb + at)))));
    };
    const __m512 d = widen_d(0), dmin = widen_d(8);
    __m512i isum[n_t];
    for (int t = 0; t < n_t; ++t) isum[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m512i first = _mm512_loadu_si512(qb + 64 + 128 * c), last = _mm512_loadu_si512(qb + 128 + 128 * c);
      const __m512i lo_first = _mm512_and_si512(first, low4), lo_last = _mm512_and_si512(last, low4);
      const __m512i hi_first = _mm512_and_si512(_mm512_srli_epi16(first, 4), low4);
      const __m512i hi_last = _mm512_and_si512(_mm512_srli_epi16(last, 4), low4);
      const __m512i scale_even = q4_k_pick(scales16, 2 * c), scale_odd = q4_k_pick(scales16, 2 * c + 1);
#pragma GCC unroll 4
      for (int t = 0; t < n_t; ++t) {
        const std::int8_t* a = y[t][b].qs + 64 * c;
        const __m512i even = _mm512_add_epi16(_mm512_maddubs_epi16(lo_first, q4_k_broadcast16(a)),
                                              _mm512_maddubs_epi16(lo_last, q4_k_broadcast16(a + 16)));
        const __m512i odd = _mm512_add_epi16(_mm512_maddubs_epi16(hi_first, q4_k_broadcast16(a + 32)),
                                             _mm512_maddubs_epi16(hi_last, q4_k_broadcast16(a + 48)));
        isum[t] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(isum[t], even, scale_even), odd, scale_odd);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < n_t; ++t) {
      const act_block256& a = y[t][b];
      // The token's sums per 32 activations (pairs of its sums per 16), one per s16, in every lane.
      const __m256i pairs = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums)),
                                              _mm256_set1_epi16(1));
      const __m512i bsums32 = _mm512_broadcast_i32x4(_mm256_cvtepi32_epi16(pairs));
      const __m512i imin = _mm512_madd_epi16(mins16, bsums32);
      const __m512 yd = _mm512_set1_ps(a.d);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, yd), acc[t]);
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

using q4_k_quad_fn = void (*)(float*, const std::byte*, int, const std::byte*, std::size_t, int);
constexpr q4_k_quad_fn q4_k_quad_kernels[q4_k_panel_tokens] = {q4_k_quad_dot<1>, q4_k_quad_dot<2>, q4_k_quad_dot<3>,
                                                               q4_k_quad_dot<4>};

// kernel_table::matmul_blocks for a panel-packed q4_k w: every quad touching [o_begin, o_end), its 4
// rows computed, those in the range stored.
inline void matmul_q4_k_panels(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end) {
  const std::size_t x_bytes = activation_row_bytes(w.type, w.cols);
  const int nb = w.cols / 256;
  const std::size_t panel_bytes = static_cast<std::size_t>(nb) * q4_k_panel_quads * q4_k_quad_bytes;
  for (int p = o_begin / block_panel_rows; p * block_panel_rows < o_end; ++p) {
    const int first = p * block_panel_rows;
    const std::byte* panel = static_cast<const std::byte*>(w.data) + p * panel_bytes;
    for (int quad = 0; quad < q4_k_panel_quads; ++quad) {
      const int q_first = first + quad * block_panel_quad;
      const int r_begin = std::max(o_begin, q_first), r_end = std::min(o_end, q_first + block_panel_quad);
      if (r_begin >= r_end) continue;
      for (int t = 0; t < n_tokens; t += q4_k_panel_tokens) {
        const int n_t = std::min(q4_k_panel_tokens, n_tokens - t);
        float sums[q4_k_panel_tokens * block_panel_rows];
        q4_k_quad_kernels[n_t - 1](sums, panel, quad, xq + t * x_bytes, x_bytes, nb);
        for (int i = 0; i < n_t; ++i)
          for (int r = r_begin; r < r_end; ++r)
            out[static_cast<std::size_t>(t + i) * w.rows + r] = sums[i * block_panel_rows + r - first];
      }
    }
  }
}

}  // namespace
}  // namespace pagedserve::kernels
