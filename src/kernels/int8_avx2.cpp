// The AVX2 int8 matmul for CPUs without AVX-VNNI, and the AVX2 activation quantizer. vpmaddubsw
// would saturate (255 * 127 * 2 > 32767), so both operands are widened to int16 and multiplied
// with vpmaddwd, whose int32 pair sums are exact.
#include <immintrin.h>

#include <cstring>

#include "int8_avx2.hpp"
#include "int8_kernels.hpp"
#include "int8_tiles.hpp"

namespace pagedserve::kernels {
namespace {

// A panel's 64 bytes as four ymm of int16, part j holding rows 4j..4j+3 (4 columns each). Sums come
// out as int32 pairs (columns 0+1 and 2+3 of every row), folded into row order at the end.
// 2 tokens x 1 panel: 8 accumulators, 4 weight vectors and a broadcast.
struct madd256 {
  static constexpr int max_tokens = 2, max_panels = 1;
  struct acc {
    __m256i part[4];
  };
  struct wvec {
    __m256i part[4];
  };
  using xvec = __m256i;  // the token's 4 bytes as int16, repeated 4 times
  static acc zero() { return {{_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()}}; }
  static wvec load_w(const std::int8_t* p) {
    auto part = [p](int j) { return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * j))); };
    return {{part(0), part(1), part(2), part(3)}};
  }
  static xvec load_x(const std::uint8_t* p) {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);
    return _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128(v)));
  }
  static acc step(acc a, const wvec& w, xvec x) {
    auto part = [&](int j) { return _mm256_add_epi32(a.part[j], _mm256_madd_epi16(w.part[j], x)); };
    return {{part(0), part(1), part(2), part(3)}};
  }
  // hadd of parts (rows 0-3, rows 4-7) gives [r0 r1 r4 r5 | r2 r3 r6 r7]; permute4x64 puts them in order.
  static __m256i rows(__m256i a, __m256i b) { return _mm256_permute4x64_epi64(_mm256_hadd_epi32(a, b), 0xD8); }
  static void store(float* out, const acc& a, const std::int32_t* row_sums, const float* w_scales, float x_scale,
                    int n_rows) {
    i8_store16(out, rows(a.part[0], a.part[1]), rows(a.part[2], a.part[3]), row_sums, w_scales, x_scale, n_rows);
  }
};

}  // namespace

void detail::matmul_i8_avx2(float* out, const std::uint8_t* xq, const float* x_scales, const weight& w, int n_tokens,
                            int p_begin, int p_end) {
  matmul_i8_tiles<madd256>(out, xq, x_scales, w, n_tokens, p_begin, p_end);
}

// The reference's arithmetic 8 lanes at a time (the tail through a zeroed buffer): max|x| (exact in
// any order), x * inv rounded to nearest even, clamped, offset, narrowed with two packs.
float detail::quantize_token_u8_avx2(std::uint8_t* xq, const float* x, int n, int n_pad) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  auto load = [&](int i) {
    if (i + 8 <= n) return _mm256_loadu_ps(x + i);
    alignas(32) float buf[8] = {};
    std::memcpy(buf, x + i, static_cast<std::size_t>(n - i) * sizeof(float));
    return _mm256_load_ps(buf);
  };
  __m256 max_abs = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8) max_abs = _mm256_max_ps(max_abs, _mm256_andnot_ps(sign, load(i)));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, max_abs);
  float m = 0.0f;
  for (float v : lanes) m = std::max(m, v);
  float inv = 0.0f, degenerate_scale = 0.0f;
  if (!i8_token_inverse(m, xq, n_pad, &inv, &degenerate_scale)) return degenerate_scale;
  const __m256 vinv = _mm256_set1_ps(inv), lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  const __m256i offset = _mm256_set1_epi32(128);
  for (int i = 0; i < n; i += 8) {
    const __m256 r = _mm256_round_ps(_mm256_mul_ps(load(i), vinv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(r, lo), hi)), offset);
    const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    alignas(16) std::uint8_t bytes[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(bytes), _mm_packus_epi16(q16, q16));
    std::memcpy(xq + i, bytes, static_cast<std::size_t>(std::min(8, n - i)));
  }
  std::memset(xq + n, 128, static_cast<std::size_t>(n_pad - n));
  return m / 127.0f;
}

}  // namespace pagedserve::kernels
