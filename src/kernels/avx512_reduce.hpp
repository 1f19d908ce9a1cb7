#pragma once
// The masks and horizontal reductions the AVX-512 kernels share (table_avx512.cpp and
// bf16_dot_avx512_bf16.cpp): every matmul element of an AVX-512 table goes through reduce16's pairs.
// Internal linkage on purpose: each including file compiles it with its own ISA flags.
#include <immintrin.h>

#include <cstddef>

namespace pagedserve::kernels {
namespace {

// Lanes i < n set; n in [0, 16].
inline __mmask16 tail_mask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }

// The one horizontal reduction every matmul element goes through:
// lanes (i, i+8), then (i, i+4), then (i, i+2), then (0, 1).
inline float reduce16(__m512 v) {
  const __m256 h8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
  const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
  const __m128 h1 = _mm_add_ss(h2, _mm_movehdup_ps(h2));
  return _mm_cvtss_f32(h1);
}

// Four accumulators reduced at once with the same pairs of reduce16() (float addition commutes,
// so the lane arrangement does not change a bit): returns [r(a), r(b), r(c), r(d)].
inline __m128 reduce16x4(__m512 a, __m512 b, __m512 c, __m512 d) {
  // Level 1 (i, i+8): [a_lo | b_lo] + [a_hi | b_hi].
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
  // Level 2 (i, i+4): 128-bit lanes [a0 a1 b0 b1] + ... -> one 128-bit lane per accumulator.
  const __m512 abcd = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
  // Level 3 (i, i+2) and level 4 (0, 1) inside each 128-bit lane.
  const __m512 l3 = _mm512_add_ps(abcd, _mm512_permute_ps(abcd, 0x4E));
  const __m512 l4 = _mm512_add_ps(l3, _mm512_permute_ps(l3, 0xB1));
  // Element 0 of each 128-bit lane holds one result.
  const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castps512_ps128(_mm512_permutexvar_ps(idx, l4));
}

// A matmul tile's sums: out[t, o0 + r] = reduce16(acc[t][r]), four rows at a time.
template <int n_t, int n_r>
inline void store_reduced(float* out, int n_out, int o0, const __m512 (&acc)[n_t][n_r]) {
#pragma GCC unroll 8
  for (int t = 0; t < n_t; ++t) {
    float* ot = out + static_cast<std::size_t>(t) * n_out + o0;
    int r = 0;
    if constexpr (n_r >= 4) {
#pragma GCC unroll 2
      for (; r + 4 <= n_r; r += 4)
        _mm_storeu_ps(ot + r, reduce16x4(acc[t][r], acc[t][r + 1], acc[t][r + 2], acc[t][r + 3]));
    }
#pragma GCC unroll 4
    for (; r < n_r; ++r) ot[r] = reduce16(acc[t][r]);
  }
}

}  // namespace
}  // namespace pagedserve::kernels
