#pragma once
// q4_k and q5_k over row panels on ymm: block_panel_q4_k.hpp's kernel, each 16-row panel block as two
// halves of 8 rows (block_panel_avx2.hpp). Per 32 bytes of nibbles, the low nibbles (4 weights of
// sub-block 2c a row) and the high ones (sub-block 2c + 1) go through vpmaddubsw against the token's 4
// matching activations; a sub-block's 8 of them add up in 16 bits (q5_k's 0..31 weights: 4 at a time),
// and vpmaddwd against the row's 6-bit scale in both 16-bit halves gives scale x dot in int32 (what
// zmm's vpmulld of the dot gives). Scales and mins unpack as on zmm; the mins meet the token's pairs of
// sums per 32 activations in vpmaddwd (zmm's vpdpwssd). fp32 per row, as on zmm: acc += float(isum) *
// (d * y.d), acc_min += float(imin) * (dmin * y.d) super-block after super-block, then acc - acc_min.
#include "block_panel_avx2.hpp"

namespace pagedserve::kernels {
namespace {

template <bool has_qh>
struct panel_q45_k_avx2 {
  using act = act_block256;
  static constexpr int block_weights = 256;
  static constexpr int block_bytes = has_qh ? 16 * 176 : 16 * 144;
  static constexpr int qh_at = 256, qs_at = has_qh ? 256 + 8 * 64 : 256;
  static constexpr int terms16 = has_qh ? 4 : 8;  // 8 x 2 x 15 x 127 and 4 x 2 x 31 x 127 < 2^15
  static constexpr int extra_per_block = 4;

  // The token's sums over sub-blocks (j, j + 2) as two 16-bit halves, j = 0, 1, 4, 5: q4_k_min_pairs.
  static void token_extras(std::int32_t* pairs, const act_block256& y) {
    constexpr int first_of_pair[4] = {0, 1, 4, 5};
    const auto sum32 = [&](int s) { return static_cast<std::uint16_t>(y.bsums[2 * s] + y.bsums[2 * s + 1]); };
    for (int k = 0; k < 4; ++k) {
      const int j = first_of_pair[k];
      pairs[k] = static_cast<std::int32_t>(static_cast<std::uint32_t>(sum32(j + 2)) << 16 | sum32(j));
    }
  }

  template <int n_t>
  static void dot(float* sums, const std::byte* panel, const act_block256* const* y, const std::int32_t* const* min_pairs,
                  int nb) {
    __m256 acc[n_t][2], acc_min[n_t][2];
    for (int t = 0; t < n_t; ++t)
      for (int h = 0; h < 2; ++h) acc[t][h] = acc_min[t][h] = _mm256_setzero_ps();
    const __m256i low4 = _mm256_set1_epi8(0xF), low6 = _mm256_set1_epi8(0x3F), top2 = _mm256_set1_epi8(0x30);
    const __m256i low_bytes = _mm256_set1_epi16(0xFF), sixteen = _mm256_set1_epi8(16);
    for (int b = 0; b < nb; ++b) {
      const std::byte* block = panel + static_cast<std::size_t>(b) * block_bytes;
#pragma GCC unroll 1
      for (int h = 0; h < 2; ++h) {  // not unrolled: GCC then hoists both halves' work and spills
        const auto load = [&](int at) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + at + 32 * h)); };
        const __m256i s0 = load(64), s1 = load(128), s2 = load(192);
        const __m256i scales03 = _mm256_and_si256(s0, low6);
        const __m256i scales47 =
            _mm256_or_si256(_mm256_and_si256(s2, low4), _mm256_and_si256(_mm256_srli_epi16(s0, 2), top2));
        __m256i isum[n_t];
        const std::int8_t* qs[n_t];
        for (int t = 0; t < n_t; ++t) isum[t] = _mm256_setzero_si256(), qs[t] = avx2_activations(y[t][b].qs);
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
          const __m256i& scales = c < 2 ? scales03 : scales47;
          const __m256i scale_even = _mm256_shuffle_epi8(scales, avx2_byte_in_halves(2 * c % 4));
          const __m256i scale_odd = _mm256_shuffle_epi8(scales, avx2_byte_in_halves(2 * c % 4 + 1));
          __m256i even[n_t], odd[n_t];
#pragma GCC unroll 8
          for (int u = 0; u < 8; ++u) {
            const __m256i v = load(qs_at + 64 * (8 * c + u));
            __m256i lo = _mm256_and_si256(v, low4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
            if constexpr (has_qh) {  // bit 2c (2c + 1) of qh run u: 16 on the low (high) nibble
              const __m256i qh = load(qh_at + 64 * u);
              lo = _mm256_or_si256(lo, _mm256_and_si256(avx2_bit_to_4(qh, 2 * c), sixteen));
              hi = _mm256_or_si256(hi, _mm256_and_si256(avx2_bit_to_4(qh, 2 * c + 1), sixteen));
            }
#pragma GCC unroll 4
            for (int t = 0; t < n_t; ++t) {
              const __m256i e = _mm256_maddubs_epi16(lo, avx2_broadcast4(qs[t] + 64 * c + 4 * u));
              const __m256i o = _mm256_maddubs_epi16(hi, avx2_broadcast4(qs[t] + 64 * c + 32 + 4 * u));
              even[t] = u % terms16 == 0 ? e : _mm256_add_epi16(even[t], e);
              odd[t] = u % terms16 == 0 ? o : _mm256_add_epi16(odd[t], o);
              if (u % terms16 == terms16 - 1)
                isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_madd_epi16(even[t], scale_even),
                                                                     _mm256_madd_epi16(odd[t], scale_odd)));
            }
          }
        }
        // The mins after the weights, so they hold no registers across them.
        const __m256i mins03 = _mm256_and_si256(s1, low6);
        const __m256i mins47 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(s2, 4), low4),
                                               _mm256_and_si256(_mm256_srli_epi16(s1, 2), top2));
        const __m256i min_pair[4] = {_mm256_and_si256(mins03, low_bytes), _mm256_srli_epi16(mins03, 8),
                                     _mm256_and_si256(mins47, low_bytes), _mm256_srli_epi16(mins47, 8)};
        const auto fp16 = [&](int at) {
          return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + at + 16 * h)));
        };
        const __m256 d = fp16(0), dmin = fp16(32);
#pragma GCC unroll 4
        for (int t = 0; t < n_t; ++t) {
          const std::int32_t* pairs = min_pairs[t] + 4 * b;
          __m256i imin = _mm256_madd_epi16(min_pair[0], _mm256_set1_epi32(pairs[0]));
          for (int k = 1; k < 4; ++k) imin = _mm256_add_epi32(imin, _mm256_madd_epi16(min_pair[k], _mm256_set1_epi32(pairs[k])));
          const __m256 yd = _mm256_set1_ps(y[t][b].d);
          acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, yd), acc[t][h]);
          acc_min[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(imin), _mm256_mul_ps(dmin, yd), acc_min[t][h]);
        }
      }
    }
    for (int t = 0; t < n_t; ++t)
      for (int h = 0; h < 2; ++h)
        _mm256_storeu_ps(sums + t * block_panel_rows + 8 * h, _mm256_sub_ps(acc[t][h], acc_min[t][h]));
  }
};

using panel_q4_k_avx2 = panel_q45_k_avx2<false>;
using panel_q5_k_avx2 = panel_q45_k_avx2<true>;

}  // namespace
}  // namespace pagedserve::kernels
