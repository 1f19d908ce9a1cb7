#pragma once
// q3_k over 16-row panels (model/ggml_block_panels.hpp) on zmm with VNNI, on q2_k's loop over panels and
// tokens (block_panel_q23_k.hpp). The panel stores each weight as u = its 2 qs bits + 4 x its hmask bit
// (0..7, the file's -4..3 plus 4), re-encoded at load in triples of 64-byte runs X, Y, Z, triple p holding
// groups g0 = 4 (p / 2) + p % 2 and g0 + 2 (ggml_block_panels.cpp, q3_k_weights_to_panel): 6 of a triple's
// 8 weight vectors are one vpandd (u at bits 0-2: x 1, or at bits 5-7: x 32), the other 2 a shift of Z and
// one vpternlogd ((X ^ Z << 2) & 0x38: u x 8). Per group a chain of 4 vpdpbusd against the token's
// activations ({1to16} broadcast), shifted once in the middle so that its quads meet at one power of 2:
// g0's x 8, then >> 3 (exact), x 1, x 1, x 1 ends at its signed dot; g0 + 2's x 8, << 2, x 32, x 32, x 32
// ends at 32 x its dot. Both start at -32 x the token's group sum (panel_q3_k::token_extras: the offset
// 4 of u), so the chains hold the dots the row kernel computes (|dot| <= 16 x 4 x 128), exactly. One
// vpternlogd puts g0's dot in the lower 16 bits and g0 + 2's (shifted up 11) in the upper, and one
// vpdpwssd meets them with the pair of 6-bit signed scales (one vpsraw of the unpacked scale bytes).
// Per 256 weights and 16 rows, 1 token: 64 vpdpbusd, 48 vpandd, 24 vpternlogd, 48 shifts, 8 vpdpwssd (the 2-bit +
// hmask planes took 64 vpandd, 64 vptestmb, 64 masked vpaddb, 16 vpdpwssd and ~80 shifts).
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

// q3_k's panel block (1760 bytes): d at 2i; the 12 packed scale bytes at 32 + 64s + 4i (s < 3); triple p's
// runs X, Y, Z at 224 + 192p, + 64, + 128 (p < 8), row i's 4 bytes at 4i of each.
struct panel_q3_k {
  static constexpr std::size_t block_bytes = 16 * 110;
  static constexpr int triples_at = 224, triple_bytes = 192;
  static constexpr int extra_per_block = 16;  // the groups' chain starts
  // The 16 groups' scales minus 32 as signed bytes (k3_scales): byte b of s[q]'s element i is row i's
  // scale of group g = 4q + b: nibble g / 8 of packed byte g % 8, below bits 2q, 2q + 1 of byte 8 + b.
  static void scales(const std::byte* block, __m512i* s) {
    const __m512i packed0 = _mm512_loadu_si512(block + 32), packed4 = _mm512_loadu_si512(block + 96);
    const __m512i high = _mm512_loadu_si512(block + 160), nibble = _mm512_set1_epi8(0xF), bits45 = _mm512_set1_epi8(0x30);
    const __m512i low[4] = {_mm512_and_si512(packed0, nibble), _mm512_and_si512(packed4, nibble),
                            _mm512_and_si512(_mm512_srli_epi16(packed0, 4), nibble),
                            _mm512_and_si512(_mm512_srli_epi16(packed4, 4), nibble)};
    // Bits 2q, 2q + 1 of each byte to bits 4, 5 (16-bit shifts: what crosses from the next byte is masked).
    const __m512i top[4] = {_mm512_slli_epi16(high, 4), _mm512_slli_epi16(high, 2), high, _mm512_srli_epi16(high, 2)};
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q)
      s[q] = _mm512_sub_epi8(_mm512_ternarylogic_epi32(low[q], top[q], bits45, 0xF8), _mm512_set1_epi8(32));
  }
  // Triple p's pair of scales, groups g0 = 4q + e (q = p / 2, e = p % 2) and g0 + 2, as 16-bit halves of
  // each row's element: bytes e and e + 2 of s[q] sign-extended.
  static __m512i scale_pair(const __m512i* s, int p) {
    return _mm512_srai_epi16(p % 2 ? s[p / 2] : _mm512_slli_epi16(s[p / 2], 8), 8);
  }
  // Every chain starts at -4 x its group's activation sum in units of its first quad (x 8).
  static void token_extras(std::int32_t* extra, const act_block256& y) {
    for (int g = 0; g < 16; ++g) extra[g] = -32 * y.bsums[g];
  }
};

// sums[t * 16 + r] = row r of the panel · token t's activations y[t], t < n_t; starts[t] holds token t's
// 16 chain starts per super-block (panel_q3_k::token_extras).
template <int n_t>
void q3_k_panel_dot(float* sums, const std::byte* panel, const act_block256* const* y,
                    const std::int32_t* const* starts, int nb) {
  __m512 acc[n_t];
  for (int t = 0; t < n_t; ++t) acc[t] = _mm512_setzero_ps();
  for (int b = 0; b < nb; ++b) {
    const std::byte* block = panel + static_cast<std::size_t>(b) * panel_q3_k::block_bytes;
    const auto activations = [&](int t, int g, int r) { return y[t][b].qs + 16 * g + 4 * r; };
    const auto mask = [](int m) { return _mm512_set1_epi8(static_cast<char>(m)); };
    __m512i isum[n_t], group_scales[4];
    for (int t = 0; t < n_t; ++t) isum[t] = _mm512_setzero_si512();
    panel_q3_k::scales(block, group_scales);
#pragma GCC unroll 8
    for (int p = 0; p < 8; ++p) {
      const std::byte* triple = block + panel_q3_k::triples_at + panel_q3_k::triple_bytes * p;
      __m512i x = _mm512_loadu_si512(triple), y_run = _mm512_loadu_si512(triple + 64),
                    z = _mm512_loadu_si512(triple + 128);
      // Held in registers: GCC otherwise folds each use into its own 64-byte load (10 a triple), which ran
      // the 1-token kernel 1.5x slower.
      asm("" : "+v"(x), "+v"(y_run), "+v"(z));
      const int g0 = 4 * (p / 2) + p % 2, g2 = g0 + 2;
      // Group g0: quad 3 at x 8 ((X ^ Z << 2) & 0x38: vpternlogd 0x28 is c & (a ^ b)), quads 0-2 at x 1.
      const __m512i w_g0[4] = {_mm512_ternarylogic_epi32(x, _mm512_slli_epi32(z, 2), mask(0x38), 0x28),
                               _mm512_and_si512(x, mask(7)), _mm512_and_si512(y_run, mask(7)),
                               _mm512_and_si512(z, mask(7))};
      // Group g0 + 2: quad 3 at x 8 ((Y ^ Z << 1) & 0x38), quads 0-2 at x 32.
      const __m512i w_g2[4] = {_mm512_ternarylogic_epi32(y_run, _mm512_slli_epi32(z, 1), mask(0x38), 0x28),
                               _mm512_and_si512(x, mask(0xE0)), _mm512_and_si512(y_run, mask(0xE0)),
                               _mm512_and_si512(z, mask(0xE0))};
      const __m512i scales = panel_q3_k::scale_pair(group_scales, p);
#pragma GCC unroll 4
      for (int t = 0; t < n_t; ++t) {
        const std::int32_t* start = starts[t] + panel_q3_k::extra_per_block * b;
        __m512i dot0 = dpbusd_1to16(_mm512_set1_epi32(start[g0]), w_g0[0], activations(t, g0, 3));
        __m512i dot2 = dpbusd_1to16(_mm512_set1_epi32(start[g2]), w_g2[0], activations(t, g2, 3));
        dot0 = _mm512_srai_epi32(dot0, 3);
        dot2 = _mm512_slli_epi32(dot2, 2);
#pragma GCC unroll 3
        for (int r = 0; r < 3; ++r) {
          dot0 = dpbusd_1to16(dot0, w_g0[1 + r], activations(t, g0, r));
          dot2 = dpbusd_1to16(dot2, w_g2[1 + r], activations(t, g2, r));
        }
        // g0's dot in the lower half (its upper half is sign bits), g0 + 2's (32 x dot << 11) in the upper:
        // vpternlogd 0xEC is (a & c) | b.
        const __m512i pair = _mm512_ternarylogic_epi32(dot0, _mm512_slli_epi32(dot2, 11), _mm512_set1_epi32(0xFFFF), 0xEC);
        isum[t] = _mm512_dpwssd_epi32(isum[t], pair, scales);
      }
    }
    add_scaled_superblock<n_t>(acc, isum, block, y, b);
  }
  for (int t = 0; t < n_t; ++t) _mm512_storeu_ps(sums + t * block_panel_rows, acc[t]);
}

// matmul_q23_k_panels<panel_q3_k> calls these.
template <>
constexpr q23_k_panel_fn q23_k_panel_kernels<panel_q3_k>[q23_k_tokens_of<panel_q3_k>] = {
    q3_k_panel_dot<1>, q3_k_panel_dot<2>, q3_k_panel_dot<3>, q3_k_panel_dot<4>};

}  // namespace
}  // namespace pagedserve::kernels
