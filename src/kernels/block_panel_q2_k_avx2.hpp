#pragma once
// q2_k over row panels on ymm: block_panel_q23_k.hpp's layout and integers, each 16-row panel block as two
// halves of 8 rows (block_panel_avx2.hpp). Run k = 8n + 4hh + r of qs holds 4 weights of each row per
// 2-bit field j: group g = 8n + 2j + hh, activations 16g + 4r. zmm's in-place fields (up to 192) would
// saturate vpmaddubsw, so each run is shifted once by 4: fields 0 and 2 masked at x 1, fields 1 and 3 at
// x 4 (<= 12: 4 runs x 2 x 12 x 127 < 2^15). A group's 4 vpmaddubsw add up in 16 bits and vpmaddwd
// against the row's 4-bit scale in both halves gives scale x dot (x 4 for the odd fields: their own
// accumulator, shifted back by 2 once per super-block, exactly). The mins (high nibbles) meet the token's
// pairs of group sums in vpmaddwd. The integers are zmm's; fp32 per row, as on zmm: acc += float(isum) *
// (d * y.d), acc_min += float(16 x imin) * (dmin * (y.d / 16)) super-block after super-block, then
// acc - acc_min.
#include "block_panel_avx2.hpp"

namespace pagedserve::kernels {
namespace {

struct panel_q2_k_avx2 {
  using act = act_block256;
  static constexpr int block_weights = 256, block_bytes = 16 * 84;
  static constexpr int dmin_at = 32, scales_at = 64, qs_at = 320;
  static constexpr int extra_per_block = 8;  // the group sums as 16-bit pairs

  // pairs[2s + o] = the token's sums of groups 4s + o and 4s + o + 2 as the lower and upper 16 bits: the
  // groups whose mins are the even (o = 0) or odd (o = 1) bytes of scale run s.
  static void token_extras(std::int32_t* pairs, const act_block256& y) {
    const auto sum = [&](int g) { return static_cast<std::uint32_t>(static_cast<std::uint16_t>(y.bsums[g])); };
    for (int s = 0; s < 4; ++s)
      for (int o = 0; o < 2; ++o) pairs[2 * s + o] = static_cast<std::int32_t>(sum(4 * s + o + 2) << 16 | sum(4 * s + o));
  }

  template <int n_t>
  static void dot(float* sums, const std::byte* panel, const act_block256* const* y, const std::int32_t* const* min_pairs,
                  int nb) {
    __m256 acc[n_t][2], acc_min[n_t][2];
    for (int t = 0; t < n_t; ++t)
      for (int h = 0; h < 2; ++h) acc[t][h] = acc_min[t][h] = _mm256_setzero_ps();
    const __m256i low4 = _mm256_set1_epi8(0xF);
    // GCC unrolls the loop over halves despite the pragma and interleaves them. From 2 tokens on that
    // spills (a count it cannot see keeps the loop: 4 tokens 1.2-1.4x faster from DRAM); at 1 token the
    // interleaved halves read each line once and ran faster from DRAM (1.2-1.6x), so they stay.
    int halves = 2;
    if constexpr (n_t > 1) asm("" : "+r"(halves));
    for (int b = 0; b < nb; ++b) {
      const std::byte* block = panel + static_cast<std::size_t>(b) * block_bytes;
#pragma GCC unroll 1
      for (int h = 0; h < halves; ++h) {
        const auto load = [&](int at) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + at + 32 * h)); };
        __m256i isum[n_t], isum_x4[n_t];
        const std::int8_t* qs[n_t];
        for (int t = 0; t < n_t; ++t)
          isum[t] = isum_x4[t] = _mm256_setzero_si256(), qs[t] = avx2_activations(y[t][b].qs);
#pragma GCC unroll 1
        for (int n = 0; n < 2; ++n)
#pragma GCC unroll 2
          for (int hh = 0; hh < 2; ++hh)
#pragma GCC unroll 2
            for (int jp = 0; jp < 2; ++jp) {  // fields 2jp (x 1) and 2jp + 1 (x 4) of the group's 4 runs
              __m256i runs[4];
#pragma GCC unroll 4
              for (int r = 0; r < 4; ++r) {
                const __m256i v = load(qs_at + 64 * (8 * n + 4 * hh + r));
                runs[r] = jp ? _mm256_srli_epi16(v, 4) : v;
              }
              const __m256i scales = _mm256_and_si256(load(scales_at + 64 * (2 * n + jp)), low4);
#pragma GCC unroll 2
              for (int e = 0; e < 2; ++e) {
                const int g = 8 * n + 4 * jp + 2 * e + hh;
                const __m256i mask = _mm256_set1_epi8(e ? 0xC : 0x3);
                const __m256i scale = _mm256_shuffle_epi8(scales, avx2_byte_in_halves(g % 4));
                __m256i w[4];
#pragma GCC unroll 4
                for (int r = 0; r < 4; ++r) w[r] = _mm256_and_si256(runs[r], mask);
#pragma GCC unroll 4
                for (int t = 0; t < n_t; ++t) {
                  const __m256i s16 = avx2_group_pairs(w, qs[t] + 16 * g);
                  __m256i& to = e ? isum_x4[t] : isum[t];
                  to = _mm256_add_epi32(to, _mm256_madd_epi16(s16, scale));
                }
              }
            }
        // The mins after the weights, so they hold no registers across them: of scale run s, bytes 0 and 2
        // (groups 4s, 4s + 2) in the 16-bit halves' low bytes, bytes 1 and 3 in their high nibbles.
        __m256i mins[4][2];
#pragma GCC unroll 4
        for (int s = 0; s < 4; ++s) {
          const __m256i run = load(scales_at + 64 * s);
          mins[s][0] = _mm256_and_si256(_mm256_srli_epi16(run, 4), _mm256_set1_epi16(0xF));
          mins[s][1] = _mm256_srli_epi16(run, 12);
        }
        const auto fp16 = [&](int at) {
          return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + at + 16 * h)));
        };
        const __m256 d = fp16(0), dmin = fp16(dmin_at);
#pragma GCC unroll 4
        for (int t = 0; t < n_t; ++t) {
          const std::int32_t* pairs = min_pairs[t] + extra_per_block * b;
          __m256i imin = _mm256_setzero_si256();
#pragma GCC unroll 4
          for (int s = 0; s < 4; ++s)
            imin = _mm256_add_epi32(imin, _mm256_add_epi32(_mm256_madd_epi16(mins[s][0], _mm256_set1_epi32(pairs[2 * s])),
                                                           _mm256_madd_epi16(mins[s][1], _mm256_set1_epi32(pairs[2 * s + 1]))));
          const __m256i total = _mm256_add_epi32(isum[t], _mm256_srai_epi32(isum_x4[t], 2));
          acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_mul_ps(d, _mm256_set1_ps(y[t][b].d)), acc[t][h]);
          const __m256 dmin_yd = _mm256_mul_ps(dmin, _mm256_set1_ps(y[t][b].d * (1.0f / 16)));
          acc_min[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_slli_epi32(imin, 4)), dmin_yd, acc_min[t][h]);
        }
      }
    }
    for (int t = 0; t < n_t; ++t)
      for (int h = 0; h < 2; ++h)
        _mm256_storeu_ps(sums + t * block_panel_rows + 8 * h, _mm256_sub_ps(acc[t][h], acc_min[t][h]));
  }
};

}  // namespace
}  // namespace pagedserve::kernels
