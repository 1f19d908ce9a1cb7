#pragma once
// q6_k over 16-row panels (model/ggml_block_panels.hpp) on zmm with VNNI, one row per 32-bit element as
// q2_k / q3_k (block_panel_q23_k.hpp, whose loop over panels and tokens this reuses). For super-block
// half n and u = 0..7, one 64-byte run of ql bytes 64n + 4u.. (qa), one of ql bytes 64n + 32 + 4u.. (qb)
// and one of qh bytes 32n + 4u.. (hq), laid out one after the other in the order read, hold 4 weights
// of each row for each of the groups 8n + 2g + u / 4 (g = 0..3): qa's low nibbles (g = 0), qb's (1),
// qa's high nibbles (2), qb's (3), each under qh's bit pair g moved to bits 4-5 (a shift and an and;
// one vpternlog joins them). The weights go in unsigned (0..63): each group's chain of 4 vpdpbusd starts
// at -32 x the token's sum of the group's 16 activations (panel_q6_k::token_extras), so it ends at the
// signed dot the row kernel computes, and vpmulld scales it by the 16 rows' int8 scales of the group
// (one vpmovsxbd of the group's 16 bytes).
// fp32: per row, acc += float(isum) * (d * y.d) super-block after super-block: one sequence whatever the
// token count, tile or row range. Included by the avx512_vnni file only, after block_panel_q23_k.hpp.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "block_panel_q23_k.hpp"
#include "dpbusd_1to16.hpp"
#include "panel_superblock_scale.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

// q6_k's panel block (3360 bytes, ggml_block_panels.cpp), read front to back: per step 2n + h, 4 x (the
// runs qa, qb, hq), then the 4 groups' scales (16 bytes each, a byte a row); d at 3328 + 2i.
struct panel_q6_k {
  static constexpr std::size_t block_bytes = 16 * 210;
  static constexpr int step_bytes = 832, run_bytes = 192, scales_at = 768, d_at = 3328;
  static constexpr int extra_per_block = 16;  // -32 x the token's group sums
  static void token_extras(std::int32_t* extra, const act_block256& y) {
    for (int g = 0; g < 16; ++g) extra[g] = -32 * y.bsums[g];
  }
};

// Up to this many tokens a step's runs are read in order, each run's 4 groups' weights against every
// token's 4 chains: the block streams front to back, which single-thread from DRAM ran 1-2 tokens 1.1-1.5x
// faster than group by group (the ql runs read twice each). From 4 tokens on 16 chains would not fit the
// registers: group by group, a chain per token live (1.2x faster from L2 there, equal from DRAM).
constexpr int q6_k_in_order_tokens = 3;

// Group g's 4 weights of each row from one ql run (qa for g even, qb for odd) and the qh run: the low
// (g < 2) or high nibbles, and under them qh's bit pair g at bits 4-5, zero elsewhere (16-bit shifts:
// what crosses from the next byte is masked).
inline __m512i q6_k_weights(__m512i ql, __m512i hq, int g) {
  const __m512i nibbles = g < 2 ? ql : _mm512_srli_epi16(ql, 4);
  const __m512i pair = g == 0 ? _mm512_slli_epi16(hq, 4) : g == 1 ? _mm512_slli_epi16(hq, 2)
                       : g == 2 ? hq : _mm512_srli_epi16(hq, 2);
  return _mm512_ternarylogic_epi32(nibbles, _mm512_set1_epi8(0xF), _mm512_and_si512(pair, _mm512_set1_epi8(0x30)), 0xEA);
}

// sums[t * 16 + r] = row r of the panel · token t's activations y[t], t < n_t; minus_offsets[t] holds
// token t's 16 group offsets per super-block (panel_q6_k::token_extras).
template <int n_t>
void q6_k_panel_dot(float* sums, const std::byte* panel, const act_block256* const* y,
                    const std::int32_t* const* minus_offsets, int nb) {
  __m512 acc[n_t];
  for (int t = 0; t < n_t; ++t) acc[t] = _mm512_setzero_ps();
  for (int b = 0; b < nb; ++b) {
    const std::byte* block = panel + static_cast<std::size_t>(b) * panel_q6_k::block_bytes;
    const auto load = [&](int at) { return _mm512_loadu_si512(block + at); };
    const auto activations = [&](int t, int n, int g, int u) { return y[t][b].qs + 128 * n + 32 * g + 4 * u; };
    __m512i isum[n_t];
#pragma GCC unroll 8
    for (int t = 0; t < n_t; ++t) isum[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int n = 0; n < 2; ++n)
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {  // u = 4 half + r: groups 8n + 2g + half
        const int step = panel_q6_k::step_bytes * (2 * n + half);
        const auto chain_start = [&](int t, int g) {
          return _mm512_set1_epi32(minus_offsets[t][16 * b + 8 * n + 2 * g + half]);
        };
        const auto group_scale = [&](int g) {
          return _mm512_cvtepi8_epi32(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + step + panel_q6_k::scales_at + 16 * g)));
        };
        if constexpr (n_t <= q6_k_in_order_tokens) {
          __m512i chain[n_t][4];
#pragma GCC unroll 4
          for (int t = 0; t < n_t; ++t)
#pragma GCC unroll 4
            for (int g = 0; g < 4; ++g) chain[t][g] = chain_start(t, g);
#pragma GCC unroll 4
          for (int r = 0; r < 4; ++r) {
            const int at = step + panel_q6_k::run_bytes * r;
            __m512i qa = load(at), qb = load(at + 64), hq = load(at + 128);
            asm("" : "+v"(qa), "+v"(qb), "+v"(hq));  // one load each: GCC otherwise folds one into each use
            const __m512i w[4] = {q6_k_weights(qa, hq, 0), q6_k_weights(qb, hq, 1), q6_k_weights(qa, hq, 2), q6_k_weights(qb, hq, 3)};
#pragma GCC unroll 4
            for (int t = 0; t < n_t; ++t)
#pragma GCC unroll 4
              for (int g = 0; g < 4; ++g) chain[t][g] = dpbusd_1to16(chain[t][g], w[g], activations(t, n, g, 4 * half + r));
          }
#pragma GCC unroll 4
          for (int g = 0; g < 4; ++g) {
            const __m512i scale = group_scale(g);
#pragma GCC unroll 4
            for (int t = 0; t < n_t; ++t) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(chain[t][g], scale));
          }
        } else {  // group by group: one chain per token live, scaled into isum as the group ends
#pragma GCC unroll 4
          for (int g = 0; g < 4; ++g) {
            __m512i chain[n_t];
#pragma GCC unroll 8
            for (int t = 0; t < n_t; ++t) chain[t] = chain_start(t, g);
#pragma GCC unroll 4
            for (int r = 0; r < 4; ++r) {
              const int at = step + panel_q6_k::run_bytes * r;
              const __m512i w = q6_k_weights(load(at + 64 * (g % 2)), load(at + 128), g);
#pragma GCC unroll 8
              for (int t = 0; t < n_t; ++t) chain[t] = dpbusd_1to16(chain[t], w, activations(t, n, g, 4 * half + r));
            }
            const __m512i scale = group_scale(g);
#pragma GCC unroll 8
            for (int t = 0; t < n_t; ++t) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(chain[t], scale));
          }
        }
      }
    add_scaled_superblock<n_t>(acc, isum, block + panel_q6_k::d_at, y, b);
  }
  for (int t = 0; t < n_t; ++t) _mm512_storeu_ps(sums + t * block_panel_rows, acc[t]);
}

// matmul_q23_k_panels<panel_q6_k> calls these: up to 8 tokens a decode of each block (group by group
// from 4 on, 3 registers a token live).
template <>
constexpr int q23_k_tokens_of<panel_q6_k> = 8;
template <>
constexpr q23_k_panel_fn q23_k_panel_kernels<panel_q6_k>[q23_k_tokens_of<panel_q6_k>] = {
    q6_k_panel_dot<1>, q6_k_panel_dot<2>, q6_k_panel_dot<3>, q6_k_panel_dot<4>,
    q6_k_panel_dot<5>, q6_k_panel_dot<6>, q6_k_panel_dot<7>, q6_k_panel_dot<8>};

}  // namespace
}  // namespace pagedserve::kernels
