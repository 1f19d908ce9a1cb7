#pragma once
// What both AVX2 int8 matmuls share: the epilogue of one (token, panel) accumulator, held as two
// ymm of 8 row sums. Internal linkage: included only by the _avx2 files, compiled with their flags.
#include <immintrin.h>

#include <cstdint>

namespace pagedserve::kernels {
namespace {

// out[r] = float(sums[r] - 128 * row_sums[r]) * (w_scales[r] * x_scale) for r < n_rows <= 8.
inline void i8_store8(float* out, __m256i sums, const std::int32_t* row_sums, const float* w_scales, float x_scale,
                      int n_rows) {
  if (n_rows <= 0) return;
  const __m256i exact =
      _mm256_sub_epi32(sums, _mm256_slli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row_sums)), 7));
  const __m256 scale = _mm256_mul_ps(_mm256_loadu_ps(w_scales), _mm256_set1_ps(x_scale));
  const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(exact), scale);
  if (n_rows >= 8) {
    _mm256_storeu_ps(out, v);
    return;
  }
  alignas(64) static constexpr std::int32_t bits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  _mm256_maskstore_ps(out, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits + 8 - n_rows)), v);
}

// A panel's 16 rows from its two halves (row_sums and w_scales are padded to whole panels).
inline void i8_store16(float* out, __m256i rows_0_7, __m256i rows_8_15, const std::int32_t* row_sums,
                       const float* w_scales, float x_scale, int n_rows) {
  i8_store8(out, rows_0_7, row_sums, w_scales, x_scale, n_rows);
  i8_store8(out + 8, rows_8_15, row_sums + 8, w_scales + 8, x_scale, n_rows - 8);
}

}  // namespace
}  // namespace pagedserve::kernels
