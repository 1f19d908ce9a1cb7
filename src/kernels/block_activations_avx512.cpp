// kernel_table::quantize_activations of the AVX-512 tables: block_activations.cpp's arithmetic 16 lanes at
// a time, the same bytes. Every block matmul of a decode step waits for it on one thread: the scalar loops
// took ~2 ns an element (1.5 us for a 768-wide s110m token, 3.6 us for 2048), a sixth of a small matmul.
// Exactness: max|x| is exact in any order; the scales are the same scalar expressions; the products are
// rounded to nearest even (vrndscaleps, round_even's result for |v| <= 127); vcvtps2ph rounds to nearest
// even as f32_to_f16 does. A NaN activation is skipped by the max as std::max skips it.
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC PR 105593, as in table_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "block_activations.hpp"
#include "block_kernels.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int round_nearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// f16_to_f32(f32_to_f16(v)): v rounded to fp16, widened back exactly.
inline float f16_rounded(float v) {
  return _mm512_cvtss_f32(_mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_set1_ps(v), _MM_FROUND_TO_NEAREST_INT)));
}

// max(acc, |v|) lane by lane; a NaN in v leaves acc (vmaxps returns its second operand on NaN).
inline __m512 max_abs(__m512 acc, __m512 v) { return _mm512_max_ps(_mm512_abs_ps(v), acc); }

// round(v * scale) to nearest even, as int32 lanes.
inline __m512i scaled_rounded(__m512 v, __m512 scale) {
  return _mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(v, scale), round_nearest));
}

// The 16 int32 lanes narrowed to int8 (static_cast's truncation) and stored; returns their sum as int8s
// (the scalar code sums what it stores; a NaN lane is 0 in both).
inline int store_int8(std::int8_t* out, __m512i q) {
  const __m128i narrow = _mm512_cvtepi32_epi8(q);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), narrow);
  return _mm512_reduce_add_epi32(_mm512_cvtepi8_epi32(narrow));
}

// q8_0 / q8_1 blocks of 32 (quantize_q8_32).
void quantize_q8_32_avx512(act_block32* y, const float* x, int n, bool with_sum) {
  for (int b = 0; b < n / 32; ++b, x += 32) {
    const __m512 lo = _mm512_loadu_ps(x), hi = _mm512_loadu_ps(x + 16);
    const float amax = _mm512_reduce_max_ps(max_abs(max_abs(_mm512_setzero_ps(), lo), hi));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const __m512 vid = _mm512_set1_ps(id);
    const int sum = store_int8(y[b].qs, scaled_rounded(lo, vid)) + store_int8(y[b].qs + 16, scaled_rounded(hi, vid));
    y[b].d = f16_rounded(d);
    y[b].s = with_sum ? f16_rounded(d * static_cast<float>(sum)) : 0.0f;
  }
}

// q8_K blocks of 256 (quantize_q8_k): the scale comes from the first element of largest magnitude.
void quantize_q8_k_avx512(act_block256* y, const float* x, int n) {
  for (int b = 0; b < n / 256; ++b, x += 256) {
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < 256; i += 16) acc = max_abs(acc, _mm512_loadu_ps(x + i));
    const float amax = _mm512_reduce_max_ps(acc);
    if (amax == 0.0f) {
      y[b].d = 0.0f;
      std::memset(y[b].qs, 0, sizeof y[b].qs);
      std::memset(y[b].bsums, 0, sizeof y[b].bsums);
      continue;
    }
    float max = 0.0f;
    const __m512 vamax = _mm512_set1_ps(amax);
    for (int i = 0; i < 256; i += 16) {
      const __m512 v = _mm512_loadu_ps(x + i);
      const __mmask16 at = _mm512_cmp_ps_mask(_mm512_abs_ps(v), vamax, _CMP_EQ_OQ);
      if (at) {
        max = x[i + __builtin_ctz(at)];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m512 vscale = _mm512_set1_ps(iscale);
    const __m512i top = _mm512_set1_epi32(127);
    for (int j = 0; j < 16; ++j) {
      const __m512i q = _mm512_min_epi32(scaled_rounded(_mm512_loadu_ps(x + 16 * j), vscale), top);
      y[b].bsums[j] = static_cast<std::int16_t>(store_int8(y[b].qs + 16 * j, q));
    }
    y[b].d = 1.0f / iscale;
  }
}

}  // namespace

void detail::quantize_activations_avx512(std::byte* xq, const float* x, dtype wtype, int n) {
  switch (act_format_of(wtype)) {
    case act_format::q8_0: quantize_q8_32_avx512(reinterpret_cast<act_block32*>(xq), x, n, false); return;
    case act_format::q8_1: quantize_q8_32_avx512(reinterpret_cast<act_block32*>(xq), x, n, true); return;
    case act_format::q8_k: quantize_q8_k_avx512(reinterpret_cast<act_block256*>(xq), x, n); return;
  }
}

}  // namespace pagedserve::kernels
