#pragma once
// q4_0 and q8_0 over row panels (model/ggml_block_panels.hpp) on zmm with VNNI. A panel block holds 4
// weights of each of the panel's 16 rows per 64 bytes, one row per 32-bit element, so one vpdpbusd
// against the token's 4 matching activations (an embedded {1to16} broadcast) feeds all 16 rows and the
// block's integer dot products come out one row per element, with no reduction across lanes.
// The weights go in unsigned (q4_0's 0..15, q8_0's + 128); their offset (8, 128) times the token's sum
// over the block starts each row's integer sum (q4_0_block_offsets, once per token and call).
// fp32: per row, acc += float(isum) * (d * y.d) block after block: one sequence whatever the token
// count, tile or row range (batch invariance).
// Included by the avx512_vnni file only.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "model/ggml_block_panels.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int q4_0_panel_tokens = 4;  // tokens sharing one decode of a panel's block

// How a format's panel block (16 fp16 scales, then the weights) gives its 8 zmm of unsigned weights,
// w[u] holding weights 4u..4u+3 of every row.
struct panel_q4_0 {
  static constexpr std::size_t block_bytes = 32 + 4 * 64;
  static constexpr int offset = 8;
  static void decode(const std::byte* block, __m512i* w) {
    const __m512i low4 = _mm512_set1_epi8(0xF);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512i v = _mm512_loadu_si512(block + 32 + 64 * k);
      w[k] = _mm512_and_si512(v, low4);                         // weights 4k..4k+3
      w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);  // weights 16 + 4k..
    }
  }
};
struct panel_q8_0 {
  static constexpr std::size_t block_bytes = 32 + 8 * 64;
  static constexpr int offset = 128;
  static void decode(const std::byte* block, __m512i* w) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
    for (int u = 0; u < 8; ++u) w[u] = _mm512_xor_si512(_mm512_loadu_si512(block + 32 + 64 * u), flip);
  }
};

inline __m512i q4_0_broadcast4(const std::int8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// sums[t * 16 + r] = row r of the panel · token t's activations y[t], t < n_t; minus_offset[t][b] is
// -offset x the sum of token t's block b.
template <class F, int n_t>
void q4_0_panel_dot(float* sums, const std::byte* panel, const act_block32* const* y,
                    const std::int32_t* const* minus_offset, int nb) {
  __m512 acc[n_t];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  for (int b = 0; b < nb; ++b) {
    const std::byte* block = panel + static_cast<std::size_t>(b) * F::block_bytes;
    __m512i w[8];
    F::decode(block, w);
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block)));
#pragma GCC unroll 4
    for (int t = 0; t < n_t; ++t) {
      const act_block32& a = y[t][b];
      // Two chains (weights 0..15, 16..31), so the dependent vpdpbusd overlap.
      __m512i even = _mm512_set1_epi32(minus_offset[t][b]), odd = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) {
        even = _mm512_dpbusd_epi32(even, w[u], q4_0_broadcast4(a.qs + 4 * u));
        odd = _mm512_dpbusd_epi32(odd, w[u + 4], q4_0_broadcast4(a.qs + 16 + 4 * u));
      }
      const __m512i isum = _mm512_add_epi32(even, odd);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, _mm512_set1_ps(a.d)), acc[t]);
    }
  }
  for (int t = 0; t < n_t; ++t) _mm512_storeu_ps(sums + t * block_panel_rows, acc[t]);
}

using q4_0_panel_fn = void (*)(float*, const std::byte*, const act_block32* const*, const std::int32_t* const*, int);
template <class F>
constexpr q4_0_panel_fn q4_0_panel_kernels[q4_0_panel_tokens] = {q4_0_panel_dot<F, 1>, q4_0_panel_dot<F, 2>,
                                                                 q4_0_panel_dot<F, 3>, q4_0_panel_dot<F, 4>};

// offsets[t * nb + b] = -offset x the sum of token t's activations in block b.
inline void q4_0_block_offsets(std::int32_t* offsets, const std::byte* xq, std::size_t x_bytes, int n_tokens, int nb,
                               int offset) {
  for (int t = 0; t < n_tokens; ++t) {
    const auto* y = reinterpret_cast<const act_block32*>(xq + t * x_bytes);
    for (int b = 0; b < nb; ++b) {
      std::int32_t sum = 0;
      for (std::int8_t q : y[b].qs) sum += q;
      offsets[static_cast<std::size_t>(t) * nb + b] = -offset * sum;
    }
  }
}

// kernel_table::matmul_blocks for a panel-packed q4_0 or q8_0 w: every panel touching [o_begin, o_end),
// all of its rows computed, those in the range stored.
template <class F>
void matmul_q4_0_panels(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end) {
  const std::size_t x_bytes = activation_row_bytes(w.type, w.cols);
  const int nb = w.cols / 32;
  const std::size_t panel_bytes = static_cast<std::size_t>(nb) * F::block_bytes;
  thread_local std::vector<std::int32_t> offsets;  // grows to the largest call, then reused
  if (offsets.size() < static_cast<std::size_t>(n_tokens) * nb) offsets.resize(static_cast<std::size_t>(n_tokens) * nb);
  q4_0_block_offsets(offsets.data(), xq, x_bytes, n_tokens, nb, F::offset);
  for (int p = o_begin / block_panel_rows; p * block_panel_rows < o_end; ++p) {
    const int first = p * block_panel_rows;
    const int r_begin = std::max(o_begin, first) - first, r_end = std::min(o_end, first + block_panel_rows) - first;
    for (int t = 0; t < n_tokens; t += q4_0_panel_tokens) {
      const int n_t = std::min(q4_0_panel_tokens, n_tokens - t);
      const act_block32* y[q4_0_panel_tokens];
      const std::int32_t* minus_offset[q4_0_panel_tokens];
      for (int i = 0; i < n_t; ++i) {
        y[i] = reinterpret_cast<const act_block32*>(xq + (t + i) * x_bytes);
        minus_offset[i] = offsets.data() + static_cast<std::size_t>(t + i) * nb;
      }
      float sums[q4_0_panel_tokens * block_panel_rows];
      q4_0_panel_kernels<F>[n_t - 1](sums, static_cast<const std::byte*>(w.data) + p * panel_bytes, y, minus_offset, nb);
      for (int i = 0; i < n_t; ++i)
        for (int r = r_begin; r < r_end; ++r)
          out[static_cast<std::size_t>(t + i) * w.rows + first + r] = sums[i * block_panel_rows + r];
    }
  }
}

}  // namespace
}  // namespace pagedserve::kernels
