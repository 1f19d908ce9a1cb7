#pragma once
// iq4_xs over row panels (model/ggml_block_panels.hpp) on zmm with VNNI. A panel block holds, per 64
// bytes, 4 bytes of nibbles of each of the panel's 16 rows, one row per 32-bit element: sub-block j (32
// weights) is runs 4j..4j+3, their low nibbles weights 0..15 of it and the high ones 16..31, as q4_0's
// blocks. The nibbles index the 16 levels plus 128 (vpshufb: unsigned 1..241), so one vpdpbusd against
// the token's 4 matching activations ({1to16} broadcast) feeds all 16 rows; -128 x the token's sum over
// the sub-block starts the sum, which makes it the signed dot the row kernel computes. vpmulld scales it
// by the row's 6-bit sub-block scale (minus 32), the 16 rows' scales unpacked together.
// fp32: per row, acc += float(isum) * (d * y.d) super-block after super-block: one sequence whatever the
// token count, tile or row range. Included by the avx512_vnni file only.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "block_formats.hpp"
#include "dpbusd_1to16.hpp"
#include "model/ggml_block_panels.hpp"
#include "panel_token_groups.hpp"
#include "panel_superblock_scale.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

constexpr std::size_t iq4_xs_panel_block_bytes = 16 * 136;
constexpr int iq4_xs_panel_tokens = 4;

// sums[t * 16 + r] = row r of the panel · token t's activations y[t], t < n_t; minus_offset[t] holds
// -128 x token t's sum over each sub-block (8 per super-block).
template <int n_t>
void iq4_xs_panel_dot(float* sums, const std::byte* panel, const act_block256* const* y,
                      const std::int32_t* const* minus_offset, int nb) {
  __m512 acc[n_t];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  const __m512i low4 = _mm512_set1_epi8(0xF), low4_32 = _mm512_set1_epi32(0xF), top2 = _mm512_set1_epi32(0x30);
  const __m512i levels = _mm512_xor_si512(
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_levels))),
      _mm512_set1_epi8(static_cast<char>(0x80)));
  for (int b = 0; b < nb; ++b) {
    const std::byte* block = panel + static_cast<std::size_t>(b) * iq4_xs_panel_block_bytes;
    // Row i's scales_l in element i, its scales_h times 16 likewise: scale j is nibble j of the first
    // below bits 2j, 2j + 1 of the second, minus 32.
    const __m512i scales_l = _mm512_loadu_si512(block + 64);
    const __m512i scales_h16 =
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 32))), 4);
    __m512i isum[n_t];
    for (int t = 0; t < n_t; ++t) isum[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m512i scale = _mm512_sub_epi32(
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(scales_l, 4 * j), low4_32),
                          _mm512_and_si512(_mm512_srli_epi32(scales_h16, 2 * j), top2)),
          _mm512_set1_epi32(32));
      __m512i lo[4], hi[4];
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        __m512i v = _mm512_loadu_si512(block + 128 + 64 * (4 * j + k));
        asm("" : "+v"(v));  // one load for both nibbles: GCC otherwise folds a load into each use
        lo[k] = _mm512_shuffle_epi8(levels, _mm512_and_si512(v, low4));
        hi[k] = _mm512_shuffle_epi8(levels, _mm512_and_si512(_mm512_srli_epi16(v, 4), low4));
      }
#pragma GCC unroll 4
      for (int t = 0; t < n_t; ++t) {
        const std::int8_t* q = y[t][b].qs + 32 * j;
        __m512i even = _mm512_set1_epi32(minus_offset[t][8 * b + j]), odd = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          even = dpbusd_1to16(even, lo[k], q + 4 * k);
          odd = dpbusd_1to16(odd, hi[k], q + 16 + 4 * k);
        }
        isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(_mm512_add_epi32(even, odd), scale));
      }
    }
    add_scaled_superblock<n_t>(acc, isum, block, y, b);
  }
  for (int t = 0; t < n_t; ++t) _mm512_storeu_ps(sums + t * block_panel_rows, acc[t]);
}

using iq4_xs_panel_fn = panel_kernel_fn<act_block256>;
constexpr iq4_xs_panel_fn iq4_xs_panel_kernels[iq4_xs_panel_tokens] = {iq4_xs_panel_dot<1>, iq4_xs_panel_dot<2>,
                                                                       iq4_xs_panel_dot<3>, iq4_xs_panel_dot<4>};

// offsets[(t * nb + b) * 8 + j] = -128 x the sum of token t's activations in sub-block j of super-block b.
inline void iq4_xs_sub_block_offsets(std::int32_t* offsets, const std::byte* xq, std::size_t x_bytes, int n_tokens,
                                     int nb) {
  for (int t = 0; t < n_tokens; ++t) {
    const auto* y = reinterpret_cast<const act_block256*>(xq + t * x_bytes);
    for (int b = 0; b < nb; ++b)
      for (int j = 0; j < 8; ++j)
        offsets[(static_cast<std::size_t>(t) * nb + b) * 8 + j] = -128 * (y[b].bsums[2 * j] + y[b].bsums[2 * j + 1]);
  }
}

// kernel_table::matmul_blocks for a panel-packed iq4_xs w: every panel touching [o_begin, o_end), all of
// its rows computed, those in the range stored.
inline void matmul_iq4_xs_panels(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin,
                                 int o_end) {
  const std::size_t x_bytes = activation_row_bytes(w.type, w.cols);
  const int nb = w.cols / 256;
  const std::size_t panel_bytes = static_cast<std::size_t>(nb) * iq4_xs_panel_block_bytes;
  thread_local std::vector<std::int32_t> offsets;  // grows to the largest call, then reused
  if (offsets.size() < static_cast<std::size_t>(n_tokens) * nb * 8) offsets.resize(static_cast<std::size_t>(n_tokens) * nb * 8);
  iq4_xs_sub_block_offsets(offsets.data(), xq, x_bytes, n_tokens, nb);
  store_panel_token_groups(out, w, xq, x_bytes, offsets.data(), static_cast<std::size_t>(nb) * 8, panel_bytes, nb,
                           iq4_xs_panel_kernels, n_tokens, o_begin, o_end);
}

}  // namespace
}  // namespace pagedserve::kernels
