#pragma once
// q6_k over row panels on ymm: block_panel_q6_k.hpp's kernel, each 16-row panel block as two halves of
// 8 rows (block_panel_avx2.hpp), group by group (zmm's order from 4 tokens on). A group's 4 runs of
// weights (0..63) go through vpmaddubsw against the token's activations, 2 results added in 16 bits
// (2 x 2 x 63 x 127 < 2^15) and widened by vpmaddwd; the chain starts at -32 x the token's group sum
// and vpmulld scales it by the rows' int8 group scale, as on zmm. fp32 per row, as on zmm:
// acc += float(isum) * (d * y.d) super-block after super-block.
#include "block_panel_avx2.hpp"

namespace pagedserve::kernels {
namespace {

struct panel_q6_k_avx2 {
  using act = act_block256;
  static constexpr int block_weights = 256, block_bytes = 16 * 210;
  static constexpr int step_bytes = 832, run_bytes = 192, scales_at = 768, d_at = 3328;
  static constexpr int extra_per_block = 16;  // -32 x the token's group sums

  static void token_extras(std::int32_t* extra, const act_block256& y) {
    for (int g = 0; g < 16; ++g) extra[g] = -32 * y.bsums[g];
  }

  // Group g's 4 weights of each row (block_panel_q6_k.hpp: q6_k_weights) from one ql run and the qh run.
  static __m256i weights(__m256i ql, __m256i hq, int g) {
    const __m256i nibbles = g < 2 ? ql : _mm256_srli_epi16(ql, 4);
    const __m256i pair = g == 0 ? _mm256_slli_epi16(hq, 4) : g == 1 ? _mm256_slli_epi16(hq, 2)
                         : g == 2 ? hq : _mm256_srli_epi16(hq, 2);
    return _mm256_or_si256(_mm256_and_si256(nibbles, _mm256_set1_epi8(0xF)),
                           _mm256_and_si256(pair, _mm256_set1_epi8(0x30)));
  }

  template <int n_t>
  static void dot(float* sums, const std::byte* panel, const act_block256* const* y,
                  const std::int32_t* const* minus_offsets, int nb) {
    __m256 acc[n_t][2];
    for (int t = 0; t < n_t; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    for (int b = 0; b < nb; ++b) {
      const std::byte* block = panel + static_cast<std::size_t>(b) * block_bytes;
#pragma GCC unroll 1
      for (int h = 0; h < 2; ++h) {  // not unrolled (nor the steps): GCC then hoists their work and spills
        const auto load = [&](int at) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + at + 32 * h)); };
        __m256i isum[n_t];
        const std::int8_t* qs[n_t];
        for (int t = 0; t < n_t; ++t) isum[t] = _mm256_setzero_si256(), qs[t] = avx2_activations(y[t][b].qs);
#pragma GCC unroll 1
        for (int n = 0; n < 2; ++n)
#pragma GCC unroll 1
          for (int half = 0; half < 2; ++half) {  // u = 4 half + r: groups 8n + 2g + half
            const int step = step_bytes * (2 * n + half);
#pragma GCC unroll 4
            for (int g = 0; g < 4; ++g) {
              __m256i chain[n_t];
              for (int t = 0; t < n_t; ++t) chain[t] = _mm256_set1_epi32(minus_offsets[t][16 * b + 8 * n + 2 * g + half]);
#pragma GCC unroll 2
              for (int r = 0; r < 4; r += 2) {
                const int at = step + run_bytes * r;
                const __m256i w0 = weights(load(at + 64 * (g % 2)), load(at + 128), g);
                const __m256i w1 = weights(load(at + run_bytes + 64 * (g % 2)), load(at + run_bytes + 128), g);
#pragma GCC unroll 4
                for (int t = 0; t < n_t; ++t) {
                  const std::int8_t* a = qs[t] + 128 * n + 32 * g + 4 * (4 * half + r);
                  const __m256i s16 = _mm256_add_epi16(_mm256_maddubs_epi16(w0, avx2_broadcast4(a)),
                                                       _mm256_maddubs_epi16(w1, avx2_broadcast4(a + 4)));
                  chain[t] = _mm256_add_epi32(chain[t], avx2_pairs_to_i32(s16));
                }
              }
              const __m256i scale = _mm256_cvtepi8_epi32(
                  _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + step + scales_at + 16 * g + 8 * h)));
#pragma GCC unroll 4
              for (int t = 0; t < n_t; ++t) isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(chain[t], scale));
            }
          }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + d_at + 16 * h)));
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
