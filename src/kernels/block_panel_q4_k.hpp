#pragma once
// q4_k over row panels (model/ggml_block_panels.hpp) on zmm with VNNI. A panel block holds 4 bytes of
// nibbles of each of the panel's 16 rows per 64 bytes, one row per 32-bit element: per 64 bytes, the
// low nibbles (4 weights of sub-block 2c) and the high ones (sub-block 2c + 1) go through one vpdpbusd
// each against the token's 4 matching activations ({1to16} broadcast), for all 16 rows; a sub-block's
// 8 of them give each row its integer dot, which vpmulld scales by the row's 6-bit sub-block scale.
// The 16 rows' scales and mins unpack together (get_scale_min_k4's arithmetic on bytes), and the mins
// meet the token's sums per 32 activations as 16-bit pairs in vpdpwssd (q4_k_min_pairs).
// q5_k is the same panel with its qh (the fifth bits) between the scales and the nibbles: run u of qh holds
// qh bytes 4u..4u+3 of every row, whose bit 2c (2c + 1) is the fifth bit of the low (high) nibble of
// run 8c + u's bytes: one vptestmb + masked byte add of 16 each (weights 0..31).
// fp32: per row, acc += float(isum) * (d * y.d) and acc_min += float(imin) * (dmin * y.d) super-block
// after super-block, then acc - acc_min: one sequence whatever the token count, tile or row range.
// Included by the avx512_vnni file only.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dpbusd_1to16.hpp"
#include "model/ggml_block_panels.hpp"
#include "panel_token_groups.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int q4_k_panel_tokens = 8;
// Up to this many tokens both sub-blocks of a run are computed from one load (2 chains a token live);
// beyond, sub-block by sub-block (1 chain a token), which lets 8 tokens share a decode without spills.
constexpr int q4_k_both_halves_tokens = 4;

// Where a panel block's fields are: q4_k's, and q5_k's with its qh runs before the nibbles.
struct panel_q4_k {
  static constexpr std::size_t block_bytes = 16 * 144;
  static constexpr int qs_at = 256;
  static constexpr bool has_qh = false;
  static constexpr int qh_at = 0;
};
struct panel_q5_k {
  static constexpr std::size_t block_bytes = 16 * 176;
  static constexpr int qh_at = 256, qs_at = 256 + 8 * 64;
  static constexpr bool has_qh = true;
};

// Byte j of every 32-bit element, zero-extended.
inline __m512i q4_k_byte(__m512i v, int j) {
  return _mm512_and_si512(_mm512_srli_epi32(v, 8 * j), _mm512_set1_epi32(0xFF));
}

// sums[t * 16 + r] = row r of the panel · token t's activations y[t], t < n_t; min_pairs[t] holds token
// t's 4 pairs per super-block (q4_k_min_pairs).
template <class F, int n_t>
void q4_k_panel_dot(float* sums, const std::byte* panel, const act_block256* const* y,
                    const std::int32_t* const* min_pairs, int nb) {
  __m512 acc[n_t], acc_min[n_t];
  for (int t = 0; t < n_t; ++t) acc[t] = acc_min[t] = _mm512_setzero_ps();
  const __m512i low4 = _mm512_set1_epi8(0xF), low6 = _mm512_set1_epi8(0x3F), top2 = _mm512_set1_epi8(0x30);
  const __m512i low_bytes = _mm512_set1_epi16(0xFF);
  for (int b = 0; b < nb; ++b) {
    const std::byte* block = panel + static_cast<std::size_t>(b) * F::block_bytes;
    const auto load = [&](int at) { return _mm512_loadu_si512(block + at); };
    // Scales and mins of sub-blocks 0-3 and 4-7, byte j of each row's element for sub-block j (+ 4).
    const __m512i s0 = load(64), s1 = load(128), s2 = load(192);
    const __m512i scales03 = _mm512_and_si512(s0, low6), mins03 = _mm512_and_si512(s1, low6);
    const __m512i scales47 = _mm512_or_si512(_mm512_and_si512(s2, low4), _mm512_and_si512(_mm512_srli_epi16(s0, 2), top2));
    const __m512i mins47 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(s2, 4), low4),
                                           _mm512_and_si512(_mm512_srli_epi16(s1, 2), top2));
    // Mins as 16-bit pairs: (m0, m2), (m1, m3), (m4, m6), (m5, m7).
    const __m512i min_pair[4] = {_mm512_and_si512(mins03, low_bytes), _mm512_srli_epi16(mins03, 8),
                                 _mm512_and_si512(mins47, low_bytes), _mm512_srli_epi16(mins47, 8)};
    __m512i isum[n_t];
    for (int t = 0; t < n_t; ++t) isum[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m512i& scales = c < 2 ? scales03 : scales47;
      const __m512i scale_even = q4_k_byte(scales, 2 * c % 4), scale_odd = q4_k_byte(scales, 2 * c % 4 + 1);
      // q5_k's fifth bits of run u (one load for both sub-blocks); unused for q4_k.
      const auto fifth_bits = [&](int u) {
        __m512i qh = _mm512_setzero_si512();
        if constexpr (F::has_qh) {
          qh = load(F::qh_at + 64 * u);
          asm("" : "+v"(qh));  // one load: GCC otherwise folds one into each use
        }
        return qh;
      };
      // Sub-block 2c's weights (the low nibbles of run v, h = 0) or 2c + 1's (the high ones, h = 1).
      const auto weights = [&](__m512i v, __m512i qh, int h) {
        __m512i q = h == 0 ? _mm512_and_si512(v, low4) : _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
        if constexpr (F::has_qh)
          q = _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(qh, _mm512_set1_epi8(static_cast<char>((1 + h) << 2 * c))), q,
                                   _mm512_set1_epi8(16));
        return q;
      };
      if constexpr (n_t <= q4_k_both_halves_tokens) {  // one load of each run for both sub-blocks
        __m512i even[n_t], odd[n_t];
        for (int t = 0; t < n_t; ++t) even[t] = odd[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int u = 0; u < 8; ++u) {
          __m512i v = load(F::qs_at + 64 * (8 * c + u));
          asm("" : "+v"(v));  // one load for both nibbles: GCC otherwise folds a load into each use
          const __m512i qh = fifth_bits(u);
          const __m512i lo = weights(v, qh, 0), hi = weights(v, qh, 1);
#pragma GCC unroll 4
          for (int t = 0; t < n_t; ++t) {
            even[t] = dpbusd_1to16(even[t], lo, y[t][b].qs + 64 * c + 4 * u);
            odd[t] = dpbusd_1to16(odd[t], hi, y[t][b].qs + 64 * c + 32 + 4 * u);
          }
        }
        for (int t = 0; t < n_t; ++t)
          isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(_mm512_mullo_epi32(even[t], scale_even),
                                                               _mm512_mullo_epi32(odd[t], scale_odd)));
      } else {  // sub-block by sub-block: one chain a token live, scaled into isum as it ends
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          __m512i chain[n_t];
#pragma GCC unroll 8
          for (int t = 0; t < n_t; ++t) chain[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
          for (int u = 0; u < 8; ++u) {
            const __m512i q = weights(load(F::qs_at + 64 * (8 * c + u)), fifth_bits(u), h);
#pragma GCC unroll 8
            for (int t = 0; t < n_t; ++t) chain[t] = dpbusd_1to16(chain[t], q, y[t][b].qs + 64 * c + 32 * h + 4 * u);
          }
          const __m512i scale = h == 0 ? scale_even : scale_odd;
#pragma GCC unroll 8
          for (int t = 0; t < n_t; ++t) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(chain[t], scale));
        }
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block)));
    const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 32)));
#pragma GCC unroll 4
    for (int t = 0; t < n_t; ++t) {
      const std::int32_t* pairs = min_pairs[t] + 4 * b;
      __m512i imin = _mm512_dpwssd_epi32(_mm512_setzero_si512(), min_pair[0], _mm512_set1_epi32(pairs[0]));
      for (int k = 1; k < 4; ++k) imin = _mm512_dpwssd_epi32(imin, min_pair[k], _mm512_set1_epi32(pairs[k]));
      const __m512 yd = _mm512_set1_ps(y[t][b].d);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, yd), acc[t]);
      acc_min[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(imin), _mm512_mul_ps(dmin, yd), acc_min[t]);
    }
  }
  for (int t = 0; t < n_t; ++t) _mm512_storeu_ps(sums + t * block_panel_rows, _mm512_sub_ps(acc[t], acc_min[t]));
}

using q4_k_panel_fn = panel_kernel_fn<act_block256>;
template <class F>
constexpr q4_k_panel_fn q4_k_panel_kernels[q4_k_panel_tokens] = {
    q4_k_panel_dot<F, 1>, q4_k_panel_dot<F, 2>, q4_k_panel_dot<F, 3>, q4_k_panel_dot<F, 4>,
    q4_k_panel_dot<F, 5>, q4_k_panel_dot<F, 6>, q4_k_panel_dot<F, 7>, q4_k_panel_dot<F, 8>};

// pairs[(t * nb + b) * 4 + k] = token t's sums over sub-blocks (j, j + 2) of super-block b as two 16-bit
// halves, j = 0, 1, 4, 5 for k = 0..3: the partners of the mins' pairs in q4_k_panel_dot.
inline void q4_k_min_pairs(std::int32_t* pairs, const std::byte* xq, std::size_t x_bytes, int n_tokens, int nb) {
  constexpr int first_of_pair[4] = {0, 1, 4, 5};
  for (int t = 0; t < n_tokens; ++t) {
    const auto* y = reinterpret_cast<const act_block256*>(xq + t * x_bytes);
    for (int b = 0; b < nb; ++b)
      for (int k = 0; k < 4; ++k) {
        const int j = first_of_pair[k];
        const auto sum32 = [&](int s) { return static_cast<std::uint16_t>(y[b].bsums[2 * s] + y[b].bsums[2 * s + 1]); };
        pairs[(static_cast<std::size_t>(t) * nb + b) * 4 + k] =
            static_cast<std::int32_t>(static_cast<std::uint32_t>(sum32(j + 2)) << 16 | sum32(j));
      }
  }
}

// kernel_table::matmul_blocks for a panel-packed q4_k (F = panel_q4_k) or q5_k (panel_q5_k) w: every panel
// touching [o_begin, o_end), all of its rows computed, those in the range stored.
template <class F>
void matmul_q4_k_panels(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end) {
  const std::size_t x_bytes = activation_row_bytes(w.type, w.cols);
  const int nb = w.cols / 256;
  const std::size_t panel_bytes = static_cast<std::size_t>(nb) * F::block_bytes;
  thread_local std::vector<std::int32_t> pairs;  // grows to the largest call, then reused
  if (pairs.size() < static_cast<std::size_t>(n_tokens) * nb * 4) pairs.resize(static_cast<std::size_t>(n_tokens) * nb * 4);
  q4_k_min_pairs(pairs.data(), xq, x_bytes, n_tokens, nb);
  store_panel_token_groups(out, w, xq, x_bytes, pairs.data(), static_cast<std::size_t>(nb) * 4, panel_bytes, nb,
                           q4_k_panel_kernels<F>, n_tokens, o_begin, o_end);
}

}  // namespace
}  // namespace pagedserve::kernels
