// AVX-512 variant of probability_row.hpp: the same operations as the portable code, 16 lanes at once.
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC PR 105593, as in src/kernels/table_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <limits>

#include "sampling/exp_constants.hpp"
#include "sampling/probability_row.hpp"

namespace pagedserve::sampling {
namespace {

__mmask16 tail_mask(int remaining) {
  return remaining >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << remaining) - 1);
}

// exp_nonpositive() on 16 lanes; invalid lanes (NaN, below `lowest`) are 0.
__m512 exp16(__m512 x) {
  using namespace exp_constants;
  const __mmask16 valid = _mm512_cmp_ps_mask(x, _mm512_set1_ps(lowest), _CMP_GE_OQ);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(log2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-ln2_hi), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(-ln2_lo), r);
  __m512 y = _mm512_fmadd_ps(_mm512_set1_ps(c0), r, _mm512_set1_ps(c1));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(c2));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(c3));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(c4));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(c5));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(r, r), r);
  y = _mm512_add_ps(y, _mm512_set1_ps(1.0f));
  const __m512i biased = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
  const __m512 scale = _mm512_castsi512_ps(_mm512_slli_epi32(biased, 23));
  return _mm512_maskz_mul_ps(valid, y, scale);
}

float row_max_avx512(const float* logits, int n) {
  __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int i = 0; i < n; i += 16) {
    const __m512 v = _mm512_mask_loadu_ps(m, tail_mask(n - i), logits + i);  // past the end: m itself
    m = _mm512_max_ps(v, m);  // the second operand where v is NaN: NaNs are skipped
  }
  return _mm512_reduce_max_ps(m);
}

// block_sum() of one register: 8 + 8, 4 + 4, 2 + 2, 1 + 1.
float fold(__m512 v) {
  const __m256 h8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
  const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
  return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

float probabilities_avx512(float* p, float* block_sums, const float* logits, int n, float max_logit,
                           float inv_temperature) {
  const __m512 max = _mm512_set1_ps(max_logit), inv_t = _mm512_set1_ps(inv_temperature);
  __m512 sum = _mm512_setzero_ps();
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 x = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, logits + i), max), inv_t);
    const __m512 e = _mm512_maskz_mov_ps(m, exp16(x));
    _mm512_mask_storeu_ps(p + i, m, e);
    if (block_sums) block_sums[i / 16] = fold(e);
    sum = _mm512_add_ps(sum, e);
  }
  alignas(64) float lanes[probability_lanes];
  _mm512_store_ps(lanes, sum);
  float total = 0.0f;
  for (float lane : lanes) total += lane;
  return total;
}

void stats_above_avx512(int* counts, float* masses, const float* p, int n, const float* thresholds) {
  __m512 t[n_thresholds], mass[n_thresholds];
  __m512i count[n_thresholds];
  for (int k = 0; k < n_thresholds; ++k) {
    t[k] = _mm512_set1_ps(thresholds[k]);
    mass[k] = _mm512_setzero_ps();
    count[k] = _mm512_setzero_si512();
  }
  const __m512i one = _mm512_set1_epi32(1);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, p + i);
    for (int k = 0; k < n_thresholds; ++k) {
      const __mmask16 above = _mm512_mask_cmp_ps_mask(m, v, t[k], _CMP_GE_OQ);
      count[k] = _mm512_mask_add_epi32(count[k], above, count[k], one);
      mass[k] = _mm512_mask_add_ps(mass[k], above, mass[k], v);
    }
  }
  for (int k = 0; k < n_thresholds; ++k) {
    counts[k] = _mm512_reduce_add_epi32(count[k]);
    masses[k] = _mm512_reduce_add_ps(mass[k]);
  }
}

// values and ids have room for n + 15 entries: a vector with any token above is stored whole.
int collect_above_avx512(float* values, token_id* ids, const float* p, int n, float threshold) {
  const __m512 t = _mm512_set1_ps(threshold);
  __m512i id = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i step = _mm512_set1_epi32(16);
  int k = 0;
  for (int i = 0; i < n; i += 16, id = _mm512_add_epi32(id, step)) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, p + i);
    const __mmask16 above = _mm512_mask_cmp_ps_mask(m, v, t, _CMP_GE_OQ);
    if (above == 0) continue;
    // A compress to a register and a whole store: a compressing store to memory is microcoded.
    _mm512_storeu_ps(values + k, _mm512_maskz_compress_ps(above, v));
    _mm512_storeu_si512(ids + k, _mm512_maskz_compress_epi32(above, id));
    k += __builtin_popcount(above);
  }
  return k;
}

}  // namespace

const probability_kernels* avx512_probability_kernels() {
  static const probability_kernels k{row_max_avx512, probabilities_avx512, stats_above_avx512, collect_above_avx512, "avx512"};
  const bool supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512dq");
  return supported ? &k : nullptr;
}

}  // namespace pagedserve::sampling
