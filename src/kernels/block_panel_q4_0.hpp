#pragma once
// q4_0 and q8_0 over row panels (model/ggml_block_panels.hpp) on zmm with VNNI. Per block of a quad
// (4 rows): the 4 rows' weights 0..15 in one zmm and 16..31 in another (one row per 128-bit lane; q4_0's
// both from one 64-byte load of nibbles), and one vpdpbusd each against the token's 16 activations
// broadcast to every lane: 4 rows per instruction where the row kernels (block_dot_legacy.hpp) do one.
// The weights go in unsigned (q4_0's 0..15, q8_0's + 128); their offset (8, 128) comes off as offset x
// the lane's activation sum, computed once per token and block for all 4 quads of the panel.
// fp32: per row, its 4 lanes accumulate acc += float(isum) * (d * y.d) block after block, then
// (a0 + a1) + (a2 + a3): one sequence whatever the token count, tile or row range (batch invariance).
// Included by the avx512_vnni file only.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>

#include "model/ggml_block_panels.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int q4_0_panel_quads = block_panel_rows / block_panel_quad;
constexpr int q4_0_panel_tokens = 4;  // tokens sharing one decode of a panel's block

// How a format's quad block (4 fp16 scales, then the weights) gives its two zmm of unsigned weights.
struct panel_q4_0 {
  static constexpr std::size_t quad_bytes = 72;  // 4 x 16 bytes of nibbles
  static constexpr char offset = 8;
  static void decode(const std::byte* quad, __m512i* lo, __m512i* hi) {
    const __m512i v = _mm512_loadu_si512(quad + 8), low4 = _mm512_set1_epi8(0xF);
    *lo = _mm512_and_si512(v, low4);
    *hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
  }
};
struct panel_q8_0 {
  static constexpr std::size_t quad_bytes = 136;  // 4 x 16 bytes of weights 0..15, then 4 x 16 of 16..31
  static constexpr char offset = static_cast<char>(0x80);  // 128 as the u8 of vpdpbusd
  static void decode(const std::byte* quad, __m512i* lo, __m512i* hi) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    *lo = _mm512_xor_si512(_mm512_loadu_si512(quad + 8), flip);
    *hi = _mm512_xor_si512(_mm512_loadu_si512(quad + 72), flip);
  }
};

// sums[t * 16 + r] = row r of the panel · token t's activations (y0 + t * y_stride), t < n_t.
template <class F, int n_t>
void q4_0_panel_dot(float* sums, const std::byte* panel, const std::byte* y0, std::size_t y_stride, int nb) {
  const act_block32* y[n_t];
  for (int t = 0; t < n_t; ++t) y[t] = reinterpret_cast<const act_block32*>(y0 + t * y_stride);
  __m512 acc[q4_0_panel_quads][n_t];
  for (auto& quad : acc)
    for (__m512& a : quad) a = _mm512_setzero_ps();
  const __m512i offset_u8 = _mm512_set1_epi8(F::offset);
  const __m512i d_of_lane = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  for (int b = 0; b < nb; ++b) {
    const std::byte* quads = panel + static_cast<std::size_t>(b) * q4_0_panel_quads * F::quad_bytes;
    __m512i lo[q4_0_panel_quads], hi[q4_0_panel_quads];
    __m512 d[q4_0_panel_quads];
#pragma GCC unroll 4
    for (int q = 0; q < q4_0_panel_quads; ++q) {
      const std::byte* quad = quads + q * F::quad_bytes;
      F::decode(quad, &lo[q], &hi[q]);
      const __m128 d4 = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(quad)));
      d[q] = _mm512_permutexvar_ps(d_of_lane, _mm512_castps128_ps512(d4));
    }
#pragma GCC unroll 4
    for (int t = 0; t < n_t; ++t) {
      const act_block32& a = y[t][b];
      const __m512i y_lo = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.qs)));
      const __m512i y_hi = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.qs + 16)));
      const __m512i offset = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), offset_u8, y_lo), offset_u8, y_hi);
      const __m512i minus_offset = _mm512_sub_epi32(_mm512_setzero_si512(), offset);
      const __m512 yd = _mm512_set1_ps(a.d);
#pragma GCC unroll 4
      for (int q = 0; q < q4_0_panel_quads; ++q) {
        const __m512i isum = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(minus_offset, lo[q], y_lo), hi[q], y_hi);
        acc[q][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d[q], yd), acc[q][t]);
      }
    }
  }
  for (int t = 0; t < n_t; ++t)
    for (int q = 0; q < q4_0_panel_quads; ++q) {
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, acc[q][t]);
      for (int i = 0; i < block_panel_quad; ++i)
        sums[t * block_panel_rows + q * block_panel_quad + i] =
            (lanes[4 * i] + lanes[4 * i + 1]) + (lanes[4 * i + 2] + lanes[4 * i + 3]);
    }
}

using q4_0_panel_fn = void (*)(float*, const std::byte*, const std::byte*, std::size_t, int);
template <class F>
constexpr q4_0_panel_fn q4_0_panel_kernels[q4_0_panel_tokens] = {q4_0_panel_dot<F, 1>, q4_0_panel_dot<F, 2>,
                                                                 q4_0_panel_dot<F, 3>, q4_0_panel_dot<F, 4>};

// kernel_table::matmul_blocks for a panel-packed q4_0 or q8_0 w: every panel touching [o_begin, o_end),
// all of its rows computed, those in the range stored.
template <class F>
void matmul_q4_0_panels(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end) {
  const std::size_t x_bytes = activation_row_bytes(w.type, w.cols);
  const int nb = w.cols / 32;
  const std::size_t panel_bytes = static_cast<std::size_t>(nb) * q4_0_panel_quads * F::quad_bytes;
  for (int p = o_begin / block_panel_rows; p * block_panel_rows < o_end; ++p) {
    const int first = p * block_panel_rows;
    const int r_begin = std::max(o_begin, first) - first, r_end = std::min(o_end, first + block_panel_rows) - first;
    for (int t = 0; t < n_tokens; t += q4_0_panel_tokens) {
      const int n_t = std::min(q4_0_panel_tokens, n_tokens - t);
      float sums[q4_0_panel_tokens * block_panel_rows];
      q4_0_panel_kernels<F>[n_t - 1](sums, static_cast<const std::byte*>(w.data) + p * panel_bytes, xq + t * x_bytes,
                                  x_bytes, nb);
      for (int i = 0; i < n_t; ++i)
        for (int r = r_begin; r < r_end; ++r)
          out[static_cast<std::size_t>(t + i) * w.rows + first + r] = sums[i * block_panel_rows + r];
    }
  }
}

}  // namespace
}  // namespace pagedserve::kernels
