// The AVX-512 int8 matmul for CPUs without VNNI, and the AVX-512 activation quantizer. vpmaddubsw
// would saturate (255 * 127 * 2 > 32767), so both operands are widened to int16 and multiplied
// with vpmaddwd, whose int32 pair sums are exact.
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC PR 105593, as in table_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "int8_avx512.hpp"
#include "int8_kernels.hpp"
#include "int8_tiles.hpp"

namespace pagedserve::kernels {
namespace {

// A panel's 64 bytes as int16: lo holds rows 0-7, hi rows 8-15 (4 columns each). Sums come out
// as int32 pairs (columns 0+1 and 2+3 of every row), folded into the 16 row sums at the end.
// 4 tokens x 2 panels: 16 accumulators, 4 weight vectors and a broadcast.
struct madd512 {
  static constexpr int max_tokens = 4, max_panels = 2;
  struct acc {
    __m512i lo, hi;
  };
  struct wvec {
    __m512i lo, hi;
  };
  using xvec = __m512i;  // the token's 4 bytes as int16, repeated 8 times
  static acc zero() { return {_mm512_setzero_si512(), _mm512_setzero_si512()}; }
  static wvec load_w(const std::int8_t* p) {
    return {_mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))),
            _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32)))};
  }
  static xvec load_x(const std::uint8_t* p) {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);
    return _mm512_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128(v)));
  }
  static acc step(acc a, const wvec& w, xvec x) {
    return {_mm512_add_epi32(a.lo, _mm512_madd_epi16(w.lo, x)), _mm512_add_epi32(a.hi, _mm512_madd_epi16(w.hi, x))};
  }
  static void store(float* out, const acc& a, const std::int32_t* row_sums, const float* w_scales, float x_scale,
                    int n_rows) {
    // Each pair summed into its even lane, then the even lanes of lo and hi gathered in row order.
    const __m512i lo = _mm512_add_epi32(a.lo, _mm512_srli_epi64(a.lo, 32));
    const __m512i hi = _mm512_add_epi32(a.hi, _mm512_srli_epi64(a.hi, 32));
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    i8_store16(out, _mm512_permutex2var_epi32(lo, even, hi), row_sums, w_scales, x_scale, n_rows);
  }
};

inline __mmask16 tail_mask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }

}  // namespace

void detail::matmul_i8_avx512(float* out, const std::uint8_t* xq, const float* x_scales, const weight& w, int n_tokens,
                              int p_begin, int p_end) {
  matmul_i8_tiles<madd512>(out, xq, x_scales, w, n_tokens, p_begin, p_end);
}

// The reference's arithmetic 16 lanes at a time: max|x| (exact in any order), x * inv rounded to
// nearest even, clamped, offset, narrowed with vpmovdb.
float detail::quantize_token_u8_avx512(std::uint8_t* xq, const float* x, int n, int n_pad) {
  __m512 max_abs = _mm512_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) max_abs = _mm512_max_ps(max_abs, _mm512_abs_ps(_mm512_loadu_ps(x + i)));
  if (i < n) max_abs = _mm512_max_ps(max_abs, _mm512_abs_ps(_mm512_maskz_loadu_ps(tail_mask(n - i), x + i)));
  float inv = 0.0f, degenerate_scale = 0.0f;
  const float m = _mm512_reduce_max_ps(max_abs);
  if (!i8_token_inverse(m, xq, n_pad, &inv, &degenerate_scale)) return degenerate_scale;
  const __m512 vinv = _mm512_set1_ps(inv), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
  const __m512i offset = _mm512_set1_epi32(128);
  for (i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16{0xffff} : tail_mask(n - i);
    const __m512 r = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), vinv),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(r, lo), hi)), offset);
    _mm512_mask_cvtepi32_storeu_epi8(xq + i, k, q);
  }
  std::memset(xq + n, 128, static_cast<std::size_t>(n_pad - n));
  return m / 127.0f;
}

}  // namespace pagedserve::kernels
