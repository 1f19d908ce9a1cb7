#pragma once
// The SIMD dots of the 32-weight formats (q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl) with q8_0/q8_1
// activations: each block decoded once into 32 weight bytes, multiplied with up to 4 tokens while it
// sits in a register.
#include "block_simd_ops.hpp"

namespace pagedserve::kernels {
namespace {

// The legacy 32-weight formats. decode(block, &w) gives the block's weight bytes (signed, or unsigned
// with a min); the kernels differ only there.
struct fmt_q4_0 {
  using block = block_q4_0;
  static constexpr bool has_min = false;
  static __m256i decode(const block& b) { return _mm256_sub_epi8(nibbles32(b.qs), _mm256_set1_epi8(8)); }
};
struct fmt_q8_0 {
  using block = block_q8_0;
  static constexpr bool has_min = false;
  static __m256i decode(const block& b) { return load32(b.qs); }
};
struct fmt_iq4_nl {
  using block = block_iq4_nl;
  static constexpr bool has_min = false;
  static __m256i decode(const block& b) { return iq4_lookup(nibbles32(b.qs)); }
};
struct fmt_q5_0 {
  using block = block_q5_0;
  static constexpr bool has_min = false;
  static __m256i decode(const block& b) {
    return _mm256_sub_epi8(_mm256_or_si256(nibbles32(b.qs), fifth_bits(b.qh)), _mm256_set1_epi8(16));
  }
};
struct fmt_q4_1 {
  using block = block_q4_1;
  static constexpr bool has_min = true;
  static __m256i decode(const block& b) { return nibbles32(b.qs); }
};
struct fmt_q5_1 {
  using block = block_q5_1;
  static constexpr bool has_min = true;
  static __m256i decode(const block& b) { return _mm256_or_si256(nibbles32(b.qs), fifth_bits(b.qh)); }
};

// sums[t] = row x[nb] · token t's activations (y + t * y_stride bytes), t < n_t. Even and odd blocks
// go to two accumulators (two short fma chains instead of one long one), added at the end.
template <class F, int n_t>
void dot32(float* sums, const typename F::block* x, const std::byte* y0, std::size_t y_stride, int nb) {
  const act_block32* y[n_t];
  for (int t = 0; t < n_t; ++t) y[t] = reinterpret_cast<const act_block32*>(y0 + t * y_stride);
  __m256 acc[2][n_t];
  float acc_min[2][n_t];
  for (int t = 0; t < n_t; ++t) acc[0][t] = acc[1][t] = _mm256_setzero_ps(), acc_min[0][t] = acc_min[1][t] = 0.0f;
  const auto block = [&](int b, __m256* a, float* a_min) {
    const __m256i w = F::decode(x[b]);
    const float d = h(x[b].d);
    if constexpr (F::has_min) {
      const float m = h(x[b].m);
#pragma GCC unroll 4
      for (int t = 0; t < n_t; ++t) {
        const __m256i isum = dot4(_mm256_setzero_si256(), w, load32(y[t][b].qs));
        a[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d * y[t][b].d), a[t]);
        a_min[t] += m * y[t][b].s;
      }
    } else {
      const __m256i abs_w = _mm256_abs_epi8(w);
#pragma GCC unroll 4
      for (int t = 0; t < n_t; ++t) {
        const __m256i isum = dot_signed(abs_w, w, load32(y[t][b].qs));
        a[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d * y[t][b].d), a[t]);
      }
    }
  };
  int b = 0;
  for (; b + 1 < nb; b += 2) {
    block(b, acc[0], acc_min[0]);
    block(b + 1, acc[1], acc_min[1]);
  }
  if (b < nb) block(b, acc[0], acc_min[0]);
  for (int t = 0; t < n_t; ++t) sums[t] = hsum(_mm256_add_ps(acc[0][t], acc[1][t])) + (acc_min[0][t] + acc_min[1][t]);
}

}  // namespace
}  // namespace pagedserve::kernels
