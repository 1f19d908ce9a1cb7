#pragma once
// What the AVX2 panel kernels (block_panel_<format>_avx2.hpp) share: the loop over panels and token
// groups, and the integer dot of 8 rows against one token on ymm. A 16-row panel (model/ggml_block_panels.hpp:
// 4 bytes of each row per 64 bytes) is two ymm of 8 rows: the first 32 bytes of every 64 hold rows 0-7,
// the next 32 rows 8-15, so each half is read as the zmm kernels read the whole.
// AVX2 has no vpdpbusd: vpmaddubsw (u8 weights x s8 activations -> saturating s16 pairs) and vpmaddwd
// into int32. The activations are in [-127, 127] (block_activations.cpp), so a pair of products of a
// weight <= 63 fits 16 bits, and so do sums of up to 32767 / (2 x max weight x 127) pairs: the integer
// dot is exact, the same integers as the avx512_vnni panel kernels', and each format's fp32 sequence is
// theirs element for element: every output has the avx512_vnni table's bits (block_panels_test).
// Included by the avx2 and avx2_vnni files (block_dot_avx2*.cpp), the same source for both.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "model/ggml_block_panels.hpp"
#include "panel_token_groups.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int panel_avx2_tokens = 4;  // tokens sharing one decode of a panel's block

// The 4 int8 activations at p in every 32-bit element.
inline __m256i avx2_broadcast4(const std::int8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// The activations of token t's block b, opaque to the optimizer: read again for each half of a panel
// block. GCC otherwise hoists a super-block's broadcasts out of the loop over halves and spills them (the
// K-quant kernels: 64 ymm of them, 400 stack accesses a super-block).
inline const std::int8_t* avx2_activations(const std::int8_t* qs) {
  asm volatile("" : "+r"(qs));
  return qs;
}

// Bit `bit` of every byte of v moved to bit 4 (16-bit shifts: what crosses from the next byte lands
// elsewhere, for the caller's and with 0x10 to drop).
inline __m256i avx2_bit_to_4(__m256i v, int bit) {
  return bit < 4 ? _mm256_slli_epi16(v, 4 - bit) : bit == 4 ? v : _mm256_srli_epi16(v, bit - 4);
}

// vpshufb control moving bytes b0..b3 of every 32-bit element (indices within it; 0x80: zero) to its
// bytes 0..3.
inline __m256i avx2_shuffle_in_i32(int b0, int b1, int b2, int b3) {
  const int c = b0 | b1 << 8 | b2 << 16 | b3 << 24;
  return _mm256_setr_epi32(c, c + 0x04040404, c + 0x08080808, c + 0x0C0C0C0C, c, c + 0x04040404, c + 0x08080808,
                           c + 0x0C0C0C0C);
}

// vpshufb control putting byte j of every 32-bit element in both of its 16-bit halves, zero-extended
// (a per-row scale for vpmaddwd against that row's 16-bit pair sums).
inline __m256i avx2_byte_in_halves(int j) { return avx2_shuffle_in_i32(j, 0x80, j, 0x80); }

// One group of 16 activations at a (4 quads) against 4 runs of weights w, added in 16 bits: the pair
// sums of a q2_k or q3_k group (weights <= 12: 4 x 2 x 12 x 127 < 2^15).
inline __m256i avx2_group_pairs(const __m256i* w, const std::int8_t* a) {
  const auto quad = [&](int r) { return _mm256_maddubs_epi16(w[r], avx2_broadcast4(a + 4 * r)); };
  return _mm256_add_epi16(_mm256_add_epi16(quad(0), quad(1)), _mm256_add_epi16(quad(2), quad(3)));
}

// vpmaddwd of 16-bit pair sums by ones: one int32 per row.
inline __m256i avx2_pairs_to_i32(__m256i s16) { return _mm256_madd_epi16(s16, _mm256_set1_epi16(1)); }

// A format F's kernel for n_t tokens: sums[t * 16 + r] = row r of the panel · token t, from F's
// per-block token extras (F::token_extras: offsets, min pairs).
template <class F>
using panel_avx2_fn = panel_kernel_fn<typename F::act>;
template <class F>
constexpr panel_avx2_fn<F> panel_avx2_kernels[panel_avx2_tokens] = {&F::template dot<1>, &F::template dot<2>,
                                                                    &F::template dot<3>, &F::template dot<4>};

// kernel_table::matmul_blocks for a panel-packed w of format F: every panel touching [o_begin, o_end),
// all of its rows computed, those in the range stored. F::token_extras fills F::extra_per_block int32
// of one token's block (once per token and call, before the first panel).
template <class F>
void matmul_panels_avx2(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end) {
  using act = typename F::act;
  const std::size_t x_bytes = activation_row_bytes(w.type, w.cols);
  const int nb = w.cols / F::block_weights;
  const std::size_t panel_bytes = static_cast<std::size_t>(nb) * F::block_bytes;
  const std::size_t extras_per_token = static_cast<std::size_t>(nb) * F::extra_per_block;
  thread_local std::vector<std::int32_t> extras;  // grows to the largest call, then reused
  if (extras.size() < n_tokens * extras_per_token) extras.resize(n_tokens * extras_per_token);
  if constexpr (F::extra_per_block > 0)
    for (int t = 0; t < n_tokens; ++t) {
      const auto* y = reinterpret_cast<const act*>(xq + t * x_bytes);
      for (int b = 0; b < nb; ++b) F::token_extras(extras.data() + t * extras_per_token + b * F::extra_per_block, y[b]);
    }
  store_panel_token_groups(out, w, xq, x_bytes, extras.data(), extras_per_token, panel_bytes, nb,
                           panel_avx2_kernels<F>, n_tokens, o_begin, o_end);
}

}  // namespace
}  // namespace pagedserve::kernels
