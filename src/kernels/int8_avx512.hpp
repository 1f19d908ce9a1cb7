#pragma once
// What both AVX-512 int8 matmuls share: the epilogue of one (token, panel) accumulator.
// Internal linkage: included only by the _avx512 files, compiled with their flags.
#include <immintrin.h>

#include <cstdint>

namespace pagedserve::kernels {
namespace {

// out[r] = float(sums[r] - 128 * row_sums[r]) * (w_scales[r] * x_scale) for r < n_rows (row_sums and
// w_scales are padded to whole panels, so the loads are full).
inline void i8_store16(float* out, __m512i sums, const std::int32_t* row_sums, const float* w_scales, float x_scale,
                       int n_rows) {
  const __m512i exact = _mm512_sub_epi32(sums, _mm512_slli_epi32(_mm512_loadu_si512(row_sums), 7));
  const __m512 scale = _mm512_mul_ps(_mm512_loadu_ps(w_scales), _mm512_set1_ps(x_scale));
  const __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(exact), scale);
  if (n_rows == 16)
    _mm512_storeu_ps(out, v);
  else
    _mm512_mask_storeu_ps(out, static_cast<__mmask16>((1u << n_rows) - 1u), v);
}

}  // namespace
}  // namespace pagedserve::kernels
