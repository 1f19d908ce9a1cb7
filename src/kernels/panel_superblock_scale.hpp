#pragma once
// The fp32 step that ends every 256-weight panel super-block: per row, acc += float(isum) * (d * y.d),
// d the 16 rows' fp16 scales at d_fp16 (the block's start, or q6_k's d_at). One expression for the
// kernels whose batch invariance rests on it being the same sequence everywhere (q2_k, q3_k, q6_k,
// iq4_xs). Included by the avx512_vnni kernels only.
#include <immintrin.h>

#include <cstddef>

#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {

template <int n_t>
inline void add_scaled_superblock(__m512* acc, const __m512i* isum, const std::byte* d_fp16,
                                  const act_block256* const* y, int b) {
  const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(d_fp16)));
#pragma GCC unroll 4
  for (int t = 0; t < n_t; ++t)
    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, _mm512_set1_ps(y[t][b].d)), acc[t]);
}

}  // namespace pagedserve::kernels
