#pragma once
// q2_k over row panels (model/ggml_block_panels.hpp) on zmm with VNNI, and the loop over panels and
// tokens that q3_k (block_panel_q3_k.hpp) and q6_k (block_panel_q6_k.hpp) share. A panel block holds, per
// 64 bytes of qs, 4 bytes of each of the panel's 16 rows, one row per 32-bit element; run k = 8n + 4h + r
// holds qs bytes 32n + 16h + 4r.. of every row, whose 2-bit fields at shift 2j are weights
// 128n + 32j + 16h + 4r.. of group g = 8n + 2j + h (16 weights, one scale each). Per group, 4 vpdpbusd
// against the token's matching activations ({1to16} broadcast) give each row its integer dot, which one
// vpdpwssd scales by the row's scale of that group (the 16 rows' scales unpacked one group at a time).
// Weights 0..3, 4-bit scales and mins. Field j is masked in place (4^j x the weight: one vpandd, no
// shift), the group's sum shifted back by 2j (exact) and scaled by vpdpwssd (it fits 16 bits; the scale's
// upper half is 0) instead of vpmulld + add. The mins meet the token's sums per 16 as 16-bit pairs in
// vpdpwssd (panel_q2_k::token_extras), as q4_k's do.
// fp32: per row, acc += float(isum) * (d * y.d), acc_min += float(imin) * (dmin * y.d), then acc - acc_min,
// super-block after super-block: one sequence whatever the token count, tile or row range.
// Included by the avx512_vnni file only.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dpbusd_1to16.hpp"
#include "model/ggml_block_panels.hpp"
#include "panel_token_groups.hpp"
#include "panel_superblock_scale.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int q23_k_panel_tokens = 4;

// q2_k's panel block (1344 bytes): d at 2i, dmin at 32 + 2i, scale bytes 4s..4s+3 at 64 + 64s + 4i
// (s < 4; low nibble scale, high nibble min), qs bytes 4k..4k+3 at 320 + 64k + 4i (k < 16).
struct panel_q2_k {
  static constexpr std::size_t block_bytes = 16 * 84;
  static constexpr int qs_at = 320, scales_at = 64;
  static constexpr int extra_per_block = 8;  // the group sums as 32 bytes
  static void token_extras(std::int32_t* extra, const act_block256& y);  // the mins' activation pairs
};

// Field j of each qs byte in place: 4^j x the weight, one vpandd and no shift.
inline __m512i q2_k_field_in_place(__m512i v, int j) { return _mm512_and_si512(v, _mm512_set1_epi8(static_cast<char>(3 << 2 * j))); }

// sums[t * 16 + r] = row r of the panel · token t's activations y[t], t < n_t; extra[t] holds token t's
// F::extra_per_block values per super-block (F::token_extras).
template <class F, int n_t>
void q23_k_panel_dot(float* sums, const std::byte* panel, const act_block256* const* y,
                     const std::int32_t* const* extra, int nb) {
  __m512 acc[n_t], acc_min[n_t];
  for (int t = 0; t < n_t; ++t) acc[t] = acc_min[t] = _mm512_setzero_ps();
  for (int b = 0; b < nb; ++b) {
    const std::byte* block = panel + static_cast<std::size_t>(b) * F::block_bytes;
    __m512i isum[n_t];
    for (int t = 0; t < n_t; ++t) isum[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int n = 0; n < 2; ++n)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        __m512i v[4];
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) v[r] = _mm512_loadu_si512(block + F::qs_at + 64 * (8 * n + 4 * h + r));
        // Fields j = 2jp and 2jp + 1: groups g = 8n + 4jp + h and g + 2, whose 4-bit scales are bytes h and
        // h + 2 of the row's scale run 2n + jp: one vpandd of the run read from byte h on (for h = 1 the
        // load does the 8-bit shift; its last byte is the next run's, masked off).
#pragma GCC unroll 2
        for (int jp = 0; jp < 2; ++jp) {
          const int g = 8 * n + 4 * jp + h;
          const __m512i run = _mm512_loadu_si512(block + F::scales_at + 64 * (2 * n + jp) + h);
          const __m512i scales = _mm512_and_si512(run, _mm512_set1_epi32(0x000F000F));
          __m512i w[2][4];
#pragma GCC unroll 4
          for (int r = 0; r < 4; ++r)
#pragma GCC unroll 2
            for (int e = 0; e < 2; ++e) w[e][r] = q2_k_field_in_place(v[r], 2 * jp + e);
#pragma GCC unroll 4
          for (int t = 0; t < n_t; ++t) {
            const std::int8_t* q = y[t][b].qs + 16 * g;
            __m512i chain[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
#pragma GCC unroll 4
            for (int r = 0; r < 4; ++r)
#pragma GCC unroll 2
              for (int e = 0; e < 2; ++e) chain[e] = dpbusd_1to16(chain[e], w[e][r], q + 32 * e + 4 * r);
            // Group g's dot (4^(2jp) x it, shifted back exactly) in the lower 16 bits, its upper half sign bits;
            // group g + 2's (4^(2jp + 1) x it, shifted to dot << 16) in the upper: vpternlogd 0xEC is (a & c) | b.
            const __m512i low = jp ? _mm512_srai_epi32(chain[0], 4) : chain[0];
            const __m512i pair = _mm512_ternarylogic_epi32(low, _mm512_slli_epi32(chain[1], 14 - 4 * jp),
                                                           _mm512_set1_epi32(0xFFFF), 0xEC);
            isum[t] = _mm512_dpwssd_epi32(isum[t], pair, scales);
          }
        }
      }
    add_scaled_superblock<n_t>(acc, isum, block, y, b);
    {
      // Mins in place (16 x m, the high nibbles of the scale runs: one vpandd a run) against the token's
      // group sums split as 128 x hi + lo (panel_q2_k::token_extras): 4 vpdpbusd for the hi bytes, << 7,
      // 4 for the lo bytes give 16 x the mins' dot, exactly (|.| <= 16 x 15 x 2048 x 16).
      __m512i min16[4];
#pragma GCC unroll 4
      for (int s = 0; s < 4; ++s) min16[s] = _mm512_and_si512(_mm512_loadu_si512(block + F::scales_at + 64 * s), _mm512_set1_epi8(static_cast<char>(0xF0)));
      const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 32)));
#pragma GCC unroll 4
      for (int t = 0; t < n_t; ++t) {
        const auto* sum_bytes = reinterpret_cast<const std::int8_t*>(extra[t] + F::extra_per_block * b);
        __m512i imin16 = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int s = 0; s < 4; ++s) imin16 = dpbusd_1to16(imin16, min16[s], sum_bytes + 4 * s);
        imin16 = _mm512_slli_epi32(imin16, 7);
#pragma GCC unroll 4
        for (int s = 0; s < 4; ++s) imin16 = dpbusd_1to16(imin16, min16[s], sum_bytes + 16 + 4 * s);
        // float(16 x imin) x (dmin x (y.d / 16)): the bits of float(imin) x (dmin x y.d) (powers of 2).
        const __m512 dmin_yd = _mm512_mul_ps(dmin, _mm512_set1_ps(y[t][b].d * (1.0f / 16)));
        acc_min[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(imin16), dmin_yd, acc_min[t]);
      }
    }
  }
  for (int t = 0; t < n_t; ++t)
    _mm512_storeu_ps(sums + t * block_panel_rows, _mm512_sub_ps(acc[t], acc_min[t]));
}

using q23_k_panel_fn = panel_kernel_fn<act_block256>;
// Tokens sharing one decode of a block: q23_k_panel_tokens, or a format's own count (q6_k's).
template <class F>
constexpr int q23_k_tokens_of = q23_k_panel_tokens;
template <class F>
constexpr q23_k_panel_fn q23_k_panel_kernels[q23_k_tokens_of<F>] = {q23_k_panel_dot<F, 1>, q23_k_panel_dot<F, 2>,
                                                                   q23_k_panel_dot<F, 3>, q23_k_panel_dot<F, 4>};

// q2_k: extra[(t * nb + b) * 8 ..] = token t's 16 group sums of super-block b split as 128 x hi + lo
// (lo 0..127, hi -16..16), as bytes: the 16 hi (group g at byte g), then the 16 lo: the activations the
// mins' vpdpbusd meet in q23_k_panel_dot.
inline void panel_q2_k::token_extras(std::int32_t* extra, const act_block256& y) {
  std::int8_t bytes[32];
  for (int g = 0; g < 16; ++g) {
    bytes[g] = static_cast<std::int8_t>(y.bsums[g] >> 7);  // floor: lo below is 0..127
    bytes[16 + g] = static_cast<std::int8_t>(y.bsums[g] & 127);
  }
  std::memcpy(extra, bytes, sizeof bytes);
}
// kernel_table::matmul_blocks for a panel-packed q2_k or q3_k w (or q6_k: block_panel_q6_k.hpp gives
// its panel_q6_k and q23_k_panel_kernels<panel_q6_k>): every panel touching [o_begin, o_end), all of its
// rows computed, those in the range stored.
template <class F>
void matmul_q23_k_panels(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end) {
  const std::size_t x_bytes = activation_row_bytes(w.type, w.cols);
  const int nb = w.cols / 256;
  const std::size_t panel_bytes = static_cast<std::size_t>(nb) * F::block_bytes;
  const std::size_t per_token = static_cast<std::size_t>(nb) * F::extra_per_block;
  thread_local std::vector<std::int32_t> extras;  // grows to the largest call, then reused
  if (extras.size() < n_tokens * per_token) extras.resize(n_tokens * per_token);
  for (int t = 0; t < n_tokens; ++t) {
    const auto* y = reinterpret_cast<const act_block256*>(xq + t * x_bytes);
    for (int b = 0; b < nb; ++b) {
      F::token_extras(extras.data() + t * per_token + static_cast<std::size_t>(b) * F::extra_per_block, y[b]);
    }
  }
  store_panel_token_groups(out, w, xq, x_bytes, extras.data(), per_token, panel_bytes, nb, q23_k_panel_kernels<F>,
                           n_tokens, o_begin, o_end);
}

}  // namespace
}  // namespace pagedserve::kernels
