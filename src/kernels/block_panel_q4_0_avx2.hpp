#pragma once
// The 32-weight formats (q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl) over row panels on ymm: block_panel_q4_0.hpp's
// kernel, each 16-row panel block as two halves of 8 rows (block_panel_avx2.hpp). Per half, w[u] holds
// weights 4u..4u+3 of every row; vpmaddubsw against the token's 4 matching activations (broadcast) gives
// 16-bit pair sums, added in 16 bits while they fit (F::terms16), then vpmaddwd by ones into int32.
// q4_0 / q5_0 go in unsigned with their offset (8, 16) x the token's block sum starting the integer sum,
// as on zmm. q8_0's and iq4_nl's weights (up to 255 unsigned) would saturate vpmaddubsw: they go in
// signed, the sign moved onto the activations (vpsignb; |activation| <= 127, so no -128 to negate), with
// no offset: the same integer dot. fp32 per row, as on zmm: acc += float(isum) * (d * y.d) block after
// block (q4_1 / q5_1 also acc_min += m * y.s, then acc + acc_min).
#include "block_formats.hpp"
#include "block_panel_avx2.hpp"

namespace pagedserve::kernels {
namespace {

// One format's panel block: where its fields are and how its weights go in.
struct panel32_avx2_layout {
  int block_bytes;
  int qs_at;     // nibbles (4 runs of 64 bytes) or q8_0's weights (8 runs)
  int qh_at;     // q5's transposed fifth bits (a run of 64 bytes), or -1
  int m_at;      // q4_1 / q5_1's fp16 mins, or -1
  int offset;    // subtracted from every unsigned weight (the token's block sum times it starts the sum)
  int terms16;   // vpmaddubsw results summed in 16 bits before vpmaddwd (exact: see the header)
  bool is_q8;    // weights stored as int8 (q8_0)
  bool is_iq4;   // nibbles index iq4_levels (signed)
};

template <panel32_avx2_layout L>
struct panel32_avx2 {
  using act = act_block32;
  static constexpr int block_weights = 32, block_bytes = L.block_bytes;
  static constexpr int extra_per_block = L.offset ? 1 : 0;
  static constexpr bool is_signed = L.is_q8 || L.is_iq4;

  static void token_extras(std::int32_t* extra, const act_block32& y) {
    std::int32_t sum = 0;
    for (const std::int8_t q : y.qs) sum += q;
    extra[0] = -L.offset * sum;
  }

  // Half h's weights: w[u] = weights 4u..4u+3 of rows 8h..8h+7.
  static void weights(const std::byte* block, int h, __m256i* w) {
    const auto load = [&](int at) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + at + 32 * h)); };
    if constexpr (L.is_q8) {
#pragma GCC unroll 8
      for (int u = 0; u < 8; ++u) w[u] = load(L.qs_at + 64 * u);
      return;
    } else {
      const __m256i low4 = _mm256_set1_epi8(0xF);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m256i v = load(L.qs_at + 64 * k);
        w[k] = _mm256_and_si256(v, low4);
        w[k + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      }
      if constexpr (L.qh_at >= 0) {  // bit u of the transposed qh's byte k: 16 on weight 4u + k
        const __m256i qh = load(L.qh_at), sixteen = _mm256_set1_epi8(16);
#pragma GCC unroll 8
        for (int u = 0; u < 8; ++u) w[u] = _mm256_or_si256(w[u], _mm256_and_si256(avx2_bit_to_4(qh, u), sixteen));
      }
      if constexpr (L.is_iq4) {
        const __m256i levels =
            _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_levels)));
#pragma GCC unroll 8
        for (int u = 0; u < 8; ++u) w[u] = _mm256_shuffle_epi8(levels, w[u]);
      }
    }
  }

  // One token's integer dot over half h's 8 rows.
  static __m256i integer_dot(const __m256i* w, const act_block32& a, std::int32_t start) {
    __m256i isum = _mm256_set1_epi32(start);
#pragma GCC unroll 8
    for (int g = 0; g < 8; g += L.terms16) {
      __m256i s16 = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int u = g; u < g + L.terms16; ++u) {
        const __m256i x = avx2_broadcast4(a.qs + 4 * u);
        const __m256i p = is_signed ? _mm256_maddubs_epi16(_mm256_abs_epi8(w[u]), _mm256_sign_epi8(x, w[u]))
                                    : _mm256_maddubs_epi16(w[u], x);
        s16 = u == g ? p : _mm256_add_epi16(s16, p);
      }
      isum = _mm256_add_epi32(isum, avx2_pairs_to_i32(s16));
    }
    return isum;
  }

  template <int n_t>
  static void dot(float* sums, const std::byte* panel, const act_block32* const* y, const std::int32_t* const* extra,
                  int nb) {
    __m256 acc[n_t][2], acc_min[n_t][2];
    for (int t = 0; t < n_t; ++t)
      for (int h = 0; h < 2; ++h) acc[t][h] = acc_min[t][h] = _mm256_setzero_ps();
    for (int b = 0; b < nb; ++b) {
      const std::byte* block = panel + static_cast<std::size_t>(b) * block_bytes;
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        __m256i w[8];
        weights(block, h, w);
        const auto fp16 = [&](int at) {
          return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + at + 16 * h)));
        };
        const __m256 d = fp16(0);
#pragma GCC unroll 4
        for (int t = 0; t < n_t; ++t) {
          const act_block32& a = y[t][b];
          const __m256i isum = integer_dot(w, a, L.offset ? extra[t][b] : 0);
          acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, _mm256_set1_ps(a.d)), acc[t][h]);
          if constexpr (L.m_at >= 0) acc_min[t][h] = _mm256_fmadd_ps(fp16(L.m_at), _mm256_set1_ps(a.s), acc_min[t][h]);
        }
      }
    }
    for (int t = 0; t < n_t; ++t)
      for (int h = 0; h < 2; ++h)
        _mm256_storeu_ps(sums + t * block_panel_rows + 8 * h,
                         L.m_at >= 0 ? _mm256_add_ps(acc[t][h], acc_min[t][h]) : acc[t][h]);
  }
};

// Layouts as in block_panel_q4_0.hpp; terms16: 8 for 4-bit weights (8 x 2 x 15 x 127 < 2^15), 4 for
// 5-bit ones, 1 for the signed int8 products (2 x 128 x 127).
using panel_q4_0_avx2 = panel32_avx2<panel32_avx2_layout{288, 32, -1, -1, 8, 8, false, false}>;
using panel_q4_1_avx2 = panel32_avx2<panel32_avx2_layout{320, 64, -1, 32, 0, 8, false, false}>;
using panel_q5_0_avx2 = panel32_avx2<panel32_avx2_layout{352, 96, 32, -1, 16, 4, false, false}>;
using panel_q5_1_avx2 = panel32_avx2<panel32_avx2_layout{384, 128, 64, 32, 0, 4, false, false}>;
using panel_q8_0_avx2 = panel32_avx2<panel32_avx2_layout{544, 32, -1, -1, 0, 1, true, false}>;
using panel_iq4_nl_avx2 = panel32_avx2<panel32_avx2_layout{288, 32, -1, -1, 0, 1, false, true}>;

}  // namespace
}  // namespace pagedserve::kernels
