#pragma once
// q3_k over row panels on ymm: block_panel_q3_k.hpp's layout and integers, each 16-row panel block as two
// halves of 8 rows (block_panel_avx2.hpp). Triple p's runs X, Y, Z hold each row's u = the file's weight + 4
// (0..7) of groups g0 = 4 (p / 2) + p % 2 and g0 + 2: quads 0-2 at bits 0-2 (g0) and 5-7 (g0 + 2) of X, Y,
// Z, quad 3 as (X ^ Z << 2) >> 3 and (Y ^ Z << 1) >> 3 (ggml_block_panels.cpp); each is shifted down and
// masked to 0..7 for vpmaddubsw (zmm's x 8 and x 32 weights would saturate it). A group's 4 vpmaddubsw add
// up in 16 bits (4 x 2 x 7 x 127 < 2^15) and vpmaddwd against the row's signed 6-bit scale in both halves
// gives scale x the dot of u; the offset 4 of u comes off as scale x (-4 x the token's group sum), the
// triple's pair of scales meeting the pair of sums in one vpmaddwd (panel_q3_k_avx2::token_extras). The
// integers are zmm's; fp32 per row, as on zmm: acc += float(isum) * (d * y.d) super-block after super-block.
#include "block_panel_avx2.hpp"

namespace pagedserve::kernels {
namespace {

struct panel_q3_k_avx2 {
  using act = act_block256;
  static constexpr int block_weights = 256, block_bytes = 16 * 110;
  static constexpr int scales_at = 32, triples_at = 224, triple_bytes = 192;
  static constexpr int extra_per_block = 8;  // per triple, -4 x its groups' sums as 16-bit pairs

  static void token_extras(std::int32_t* pairs, const act_block256& y) {
    for (int p = 0; p < 8; ++p) {
      const int g0 = 4 * (p / 2) + p % 2;
      const auto offset = [&](int g) { return static_cast<std::uint16_t>(-4 * y.bsums[g]); };
      pairs[p] = static_cast<std::int32_t>(static_cast<std::uint32_t>(offset(g0 + 2)) << 16 | offset(g0));
    }
  }

  // The 16 groups' scales minus 32 as signed bytes (block_panel_q3_k.hpp: panel_q3_k::scales): byte b of
  // s[q]'s element i is row i's scale of group 4q + b.
  static void scales(const std::byte* block, int h, __m256i* s) {
    const auto load = [&](int at) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + at + 32 * h)); };
    const __m256i packed0 = load(scales_at), packed4 = load(scales_at + 64), high = load(scales_at + 128);
    const __m256i nibble = _mm256_set1_epi8(0xF), bits45 = _mm256_set1_epi8(0x30);
    const __m256i low[4] = {_mm256_and_si256(packed0, nibble), _mm256_and_si256(packed4, nibble),
                            _mm256_and_si256(_mm256_srli_epi16(packed0, 4), nibble),
                            _mm256_and_si256(_mm256_srli_epi16(packed4, 4), nibble)};
    const __m256i top[4] = {_mm256_slli_epi16(high, 4), _mm256_slli_epi16(high, 2), high, _mm256_srli_epi16(high, 2)};
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q)
      s[q] = _mm256_sub_epi8(_mm256_or_si256(low[q], _mm256_and_si256(top[q], bits45)), _mm256_set1_epi8(32));
  }

  template <int n_t>
  static void dot(float* sums, const std::byte* panel, const act_block256* const* y, const std::int32_t* const* offsets,
                  int nb) {
    __m256 acc[n_t][2];
    for (int t = 0; t < n_t; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    const __m256i low3 = _mm256_set1_epi8(7);
    for (int b = 0; b < nb; ++b) {
      const std::byte* block = panel + static_cast<std::size_t>(b) * block_bytes;
#pragma GCC unroll 1
      for (int h = 0; h < 2; ++h) {  // not unrolled: GCC then hoists both halves' work and spills
        const auto load = [&](int at) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + at + 32 * h)); };
        __m256i isum[n_t], group_scales[4];
        const std::int8_t* qs[n_t];
        for (int t = 0; t < n_t; ++t) isum[t] = _mm256_setzero_si256(), qs[t] = avx2_activations(y[t][b].qs);
        scales(block, h, group_scales);
#pragma GCC unroll 1
        for (int p = 0; p < 8; ++p) {
          const int at = triples_at + triple_bytes * p;
          const __m256i x = load(at), y_run = load(at + 64), z = load(at + 128);
          // Groups g0 and g0 + 2's scales sign-extended into the lower and upper 16 bits of each row's element.
          const __m256i& s = group_scales[p / 2];
          const __m256i pair = _mm256_srai_epi16(p % 2 ? s : _mm256_slli_epi16(s, 8), 8);
#pragma GCC unroll 2
          for (int e = 0; e < 2; ++e) {
            const int g = 4 * (p / 2) + p % 2 + 2 * e;
            const __m256i quad3 = e ? _mm256_xor_si256(y_run, _mm256_slli_epi16(z, 1)) : _mm256_xor_si256(x, _mm256_slli_epi16(z, 2));
            const auto field = [&](__m256i v, int shift) { return _mm256_and_si256(_mm256_srli_epi16(v, shift), low3); };
            const __m256i w[4] = {e ? field(x, 5) : _mm256_and_si256(x, low3), e ? field(y_run, 5) : _mm256_and_si256(y_run, low3),
                                  e ? field(z, 5) : _mm256_and_si256(z, low3), field(quad3, 3)};
            const __m256i scale = _mm256_shuffle_epi8(pair, e ? avx2_shuffle_in_i32(2, 3, 2, 3) : avx2_shuffle_in_i32(0, 1, 0, 1));
#pragma GCC unroll 4
            for (int t = 0; t < n_t; ++t) {
              const __m256i s16 = avx2_group_pairs(w, qs[t] + 16 * g);
              isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16, scale));
            }
          }
#pragma GCC unroll 4
          for (int t = 0; t < n_t; ++t)
            isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(pair, _mm256_set1_epi32(offsets[t][extra_per_block * b + p])));
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
