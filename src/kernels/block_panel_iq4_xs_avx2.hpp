#pragma once
// iq4_xs over row panels on ymm: block_panel_iq4_xs.hpp's kernel, each 16-row panel block as two halves
// of 8 rows (block_panel_avx2.hpp). The nibbles index the 16 levels, signed (-127..113: as unsigned
// + 128 they would saturate vpmaddubsw), so they go in as vpmaddubsw(|w|, vpsignb(x, w)) with no offset,
// one result per vpmaddwd against the row's sub-block scale (6 bits minus 32) in both 16-bit halves:
// the zmm kernel's integers (its -128 x sum offset cancels the + 128). fp32 per row, as on zmm:
// acc += float(isum) * (d * y.d) super-block after super-block.
#include "block_formats.hpp"
#include "block_panel_avx2.hpp"

namespace pagedserve::kernels {
namespace {

struct panel_iq4_xs_avx2 {
  using act = act_block256;
  static constexpr int block_weights = 256, block_bytes = 16 * 136;
  static constexpr int extra_per_block = 0;
  static void token_extras(std::int32_t*, const act_block256&) {}

  template <int n_t>
  static void dot(float* sums, const std::byte* panel, const act_block256* const* y, const std::int32_t* const*,
                  int nb) {
    __m256 acc[n_t][2];
    for (int t = 0; t < n_t; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    const __m256i low4 = _mm256_set1_epi8(0xF), low4_32 = _mm256_set1_epi32(0xF), top2 = _mm256_set1_epi32(0x30);
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_levels)));
    for (int b = 0; b < nb; ++b) {
      const std::byte* block = panel + static_cast<std::size_t>(b) * block_bytes;
#pragma GCC unroll 1
      for (int h = 0; h < 2; ++h) {
        const auto load = [&](int at) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + at + 32 * h)); };
        // Row i's scales_l in element i, its scales_h times 16 likewise (block_panel_iq4_xs.hpp).
        const __m256i scales_l = load(64);
        const __m256i scales_h16 = _mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 32 + 16 * h))), 4);
        __m256i isum[n_t];
        const std::int8_t* qs[n_t];
        for (int t = 0; t < n_t; ++t) isum[t] = _mm256_setzero_si256(), qs[t] = avx2_activations(y[t][b].qs);
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
          const __m256i scale = _mm256_sub_epi32(
              _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(scales_l, 4 * j), low4_32),
                              _mm256_and_si256(_mm256_srli_epi32(scales_h16, 2 * j), top2)),
              _mm256_set1_epi32(32));
          const __m256i scale_pair = _mm256_or_si256(_mm256_and_si256(scale, _mm256_set1_epi32(0xFFFF)),
                                                     _mm256_slli_epi32(scale, 16));
#pragma GCC unroll 4
          for (int k = 0; k < 4; ++k) {
            const __m256i v = load(128 + 64 * (4 * j + k));
            const __m256i lo = _mm256_shuffle_epi8(levels, _mm256_and_si256(v, low4));
            const __m256i hi = _mm256_shuffle_epi8(levels, _mm256_and_si256(_mm256_srli_epi16(v, 4), low4));
            const __m256i lo_abs = _mm256_abs_epi8(lo), hi_abs = _mm256_abs_epi8(hi);
#pragma GCC unroll 4
            for (int t = 0; t < n_t; ++t) {
              const std::int8_t* q = qs[t] + 32 * j + 4 * k;
              const __m256i e = _mm256_maddubs_epi16(lo_abs, _mm256_sign_epi8(avx2_broadcast4(q), lo));
              const __m256i o = _mm256_maddubs_epi16(hi_abs, _mm256_sign_epi8(avx2_broadcast4(q + 16), hi));
              isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_madd_epi16(e, scale_pair),
                                                                   _mm256_madd_epi16(o, scale_pair)));
            }
          }
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * h)));
#pragma GCC unroll 4
        for (int t = 0; t < n_t; ++t)
          acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, _mm256_set1_ps(y[t][b].d)), acc[t][h]);
      }
    }
    for (int t = 0; t < n_t; ++t)
      for (int h = 0; h < 2; ++h) _mm256_storeu_ps(sums + t * block_panel_rows + 8 * h, acc[t][h]);
  }
};

}  // namespace
}  // namespace pagedserve::kernels
