#pragma once
// The 32-weight formats (q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl) over row panels
// (model/ggml_block_panels.hpp) on zmm with VNNI. A panel block holds 4 weights of each of the
// panel's 16 rows per 64 bytes, one row per 32-bit element, so one vpdpbusd
// against the token's 4 matching activations (an embedded {1to16} broadcast) feeds all 16 rows and the
// block's integer dot products come out one row per element, with no reduction across lanes.
// The weights go in unsigned (q4_0's 0..15, q5_0's 0..31, q8_0's + 128, iq4_nl's levels + 128); their
// offset (8, 16, 128) times the token's sum over the block starts each row's integer sum
// (q4_0_block_offsets, once per token and call). q4_1 / q5_1 are unsigned with a min: no offset.
// fp32: per row, acc += float(isum) * (d * y.d) block after block (q4_1 / q5_1 also acc_min += m * y.s,
// then acc + acc_min): one sequence whatever the token count, tile or row range (batch invariance).
// Included by the avx512_vnni file only.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "block_formats.hpp"
#include "dpbusd_1to16.hpp"
#include "model/ggml_block_panels.hpp"
#include "panel_token_groups.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int q4_0_panel_tokens = 4;  // tokens sharing one decode of a panel's block

// How a format's panel block (16 fp16 scales d at its start, then its other fields) gives its 8 zmm of
// unsigned weights, w[u] holding weights 4u..4u+3 of every row (bytes 0-3 of a row's element), and
// where its fp16 mins m are (has_min: q4_1, q5_1, whose activations carry s = d x their sum).

// Nibbles laid out as q4_0's at qs: 4 runs of 64 bytes, low nibbles weights 4k.., high ones 16 + 4k...
inline void panel_nibbles(const std::byte* qs, __m512i* w) {
  const __m512i low4 = _mm512_set1_epi8(0xF);
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    const __m512i v = _mm512_loadu_si512(qs + 64 * k);
    w[k] = _mm512_and_si512(v, low4);                            // weights 4k..4k+3
    w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);  // weights 16 + 4k..
  }
}
// q5_0 / q5_1: the fifth bits, 16 added where bit u of the transposed qh's byte k is set (weight 4u + k).
inline void panel_fifth_bits(const std::byte* qh, __m512i* w) {
  const __m512i bits = _mm512_loadu_si512(qh), sixteen = _mm512_set1_epi8(16);
#pragma GCC unroll 8
  for (int u = 0; u < 8; ++u)
    w[u] = _mm512_mask_add_epi8(w[u], _mm512_test_epi8_mask(bits, _mm512_set1_epi8(static_cast<char>(1 << u))), w[u],
                                sixteen);
}
struct panel_q4_0 {
  static constexpr std::size_t block_bytes = 32 + 4 * 64;
  static constexpr int offset = 8;
  static constexpr bool has_min = false;
  static void decode(const std::byte* block, __m512i* w) { panel_nibbles(block + 32, w); }
};
struct panel_q4_1 {
  static constexpr std::size_t block_bytes = 64 + 4 * 64;
  static constexpr int offset = 0, m_at = 32;
  static constexpr bool has_min = true;
  static void decode(const std::byte* block, __m512i* w) { panel_nibbles(block + 64, w); }
};
struct panel_q5_0 {
  static constexpr std::size_t block_bytes = 96 + 4 * 64;
  static constexpr int offset = 16;
  static constexpr bool has_min = false;
  static void decode(const std::byte* block, __m512i* w) {
    panel_nibbles(block + 96, w);
    panel_fifth_bits(block + 32, w);
  }
};
struct panel_q5_1 {
  static constexpr std::size_t block_bytes = 128 + 4 * 64;
  static constexpr int offset = 0, m_at = 32;
  static constexpr bool has_min = true;
  static void decode(const std::byte* block, __m512i* w) {
    panel_nibbles(block + 128, w);
    panel_fifth_bits(block + 64, w);
  }
};
// iq4_nl: q4_0's layout; the nibbles index the 16 levels plus 128 (1..241), offset 128.
struct panel_iq4_nl {
  static constexpr std::size_t block_bytes = 32 + 4 * 64;
  static constexpr int offset = 128;
  static constexpr bool has_min = false;
  static void decode(const std::byte* block, __m512i* w) {
    const __m512i levels = _mm512_xor_si512(
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_levels))),
        _mm512_set1_epi8(static_cast<char>(0x80)));
    panel_nibbles(block + 32, w);
#pragma GCC unroll 8
    for (int u = 0; u < 8; ++u) w[u] = _mm512_shuffle_epi8(levels, w[u]);
  }
};
struct panel_q8_0 {
  static constexpr std::size_t block_bytes = 32 + 8 * 64;
  static constexpr int offset = 128;
  static constexpr bool has_min = false;
  static void decode(const std::byte* block, __m512i* w) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
    for (int u = 0; u < 8; ++u) w[u] = _mm512_xor_si512(_mm512_loadu_si512(block + 32 + 64 * u), flip);
  }
};

// sums[t * 16 + r] = row r of the panel · token t's activations y[t], t < n_t; minus_offset[t][b] is
// -offset x the sum of token t's block b (unused where the offset is 0).
template <class F, int n_t>
void q4_0_panel_dot(float* sums, const std::byte* panel, const act_block32* const* y,
                    const std::int32_t* const* minus_offset, int nb) {
  __m512 acc[n_t], acc_min[n_t];
  for (int t = 0; t < n_t; ++t) acc[t] = acc_min[t] = _mm512_setzero_ps();
  for (int b = 0; b < nb; ++b) {
    const std::byte* block = panel + static_cast<std::size_t>(b) * F::block_bytes;
    __m512i w[8];
    F::decode(block, w);
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block)));
#pragma GCC unroll 4
    for (int t = 0; t < n_t; ++t) {
      const act_block32& a = y[t][b];
      // Two chains (weights 0..15, 16..31), so the dependent vpdpbusd overlap.
      __m512i even = F::offset ? _mm512_set1_epi32(minus_offset[t][b]) : _mm512_setzero_si512();
      __m512i odd = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) {
        even = dpbusd_1to16(even, w[u], a.qs + 4 * u);
        odd = dpbusd_1to16(odd, w[u + 4], a.qs + 16 + 4 * u);
      }
      const __m512i isum = _mm512_add_epi32(even, odd);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, _mm512_set1_ps(a.d)), acc[t]);
      if constexpr (F::has_min) {
        const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + F::m_at)));
        acc_min[t] = _mm512_fmadd_ps(m, _mm512_set1_ps(a.s), acc_min[t]);
      }
    }
  }
  for (int t = 0; t < n_t; ++t)
    _mm512_storeu_ps(sums + t * block_panel_rows, F::has_min ? _mm512_add_ps(acc[t], acc_min[t]) : acc[t]);
}

using q4_0_panel_fn = panel_kernel_fn<act_block32>;
template <class F>
constexpr q4_0_panel_fn q4_0_panel_kernels[q4_0_panel_tokens] = {q4_0_panel_dot<F, 1>, q4_0_panel_dot<F, 2>,
                                                                 q4_0_panel_dot<F, 3>, q4_0_panel_dot<F, 4>};

// offsets[t * nb + b] = -offset x the sum of token t's activations in block b. Each thread of each call
// runs this before its first panel, on the critical path of small matmuls: the 32 int8 of a block are
// shifted to unsigned and summed by vpsadbw (exact), not added one by one.
inline void q4_0_block_offsets(std::int32_t* offsets, const std::byte* xq, std::size_t x_bytes, int n_tokens, int nb,
                               int offset) {
  const __m256i to_unsigned = _mm256_set1_epi8(-128);
  for (int t = 0; t < n_tokens; ++t) {
    const auto* y = reinterpret_cast<const act_block32*>(xq + t * x_bytes);
    for (int b = 0; b < nb; ++b) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs));
      const __m256i sums = _mm256_sad_epu8(_mm256_xor_si256(q, to_unsigned), _mm256_setzero_si256());
      const __m128i half = _mm_add_epi64(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
      const std::int32_t sum = _mm_cvtsi128_si32(_mm_add_epi64(half, _mm_unpackhi_epi64(half, half))) - 32 * 128;
      offsets[static_cast<std::size_t>(t) * nb + b] = -offset * sum;
    }
  }
}

// kernel_table::matmul_blocks for a panel-packed w of a 32-weight format F: every panel touching [o_begin, o_end),
// all of its rows computed, those in the range stored.
template <class F>
void matmul_q4_0_panels(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end) {
  const std::size_t x_bytes = activation_row_bytes(w.type, w.cols);
  const int nb = w.cols / 32;
  const std::size_t panel_bytes = static_cast<std::size_t>(nb) * F::block_bytes;
  thread_local std::vector<std::int32_t> offsets;  // grows to the largest call, then reused
  if (offsets.size() < static_cast<std::size_t>(n_tokens) * nb) offsets.resize(static_cast<std::size_t>(n_tokens) * nb);
  if (F::offset) q4_0_block_offsets(offsets.data(), xq, x_bytes, n_tokens, nb, F::offset);
  store_panel_token_groups(out, w, xq, x_bytes, offsets.data(), static_cast<std::size_t>(nb), panel_bytes, nb,
                           q4_0_panel_kernels<F>, n_tokens, o_begin, o_end);
}

}  // namespace
}  // namespace pagedserve::kernels
