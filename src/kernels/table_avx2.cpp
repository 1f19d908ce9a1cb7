// The AVX2 + FMA inner loops (compiled with -mavx2 -mfma, plus F16C below; called only after CPU
// detection).
//
// Batch invariance of matmul_rows: every output element out[t, o] owns exactly one ymm accumulator
// that walks k = 0, 8, 16, ... with one FMA per step (the last step masked, lanes past n_in are 0),
// then is folded by the fixed tree of reduce8(). Tiles only choose how many such independent chains
// run side by side, never the order inside one, so any n_tokens, token position or row range gives
// bit-identical results for the same x row and w row. bf16 and fp16 weights go through the same
// template: they are widened exactly to fp32 before the FMA, so they give the fp32 path's bits.
// The int8 matmul and activation quantizer live in int8_avx2*.cpp.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "attend_group.hpp"
#include "block_kernels.hpp"
#include "int8_kernels.hpp"
#include "layernorm_gelu.hpp"
#include "pagedserve/kernels.hpp"

// fp16 -> fp32 widening (vcvtph2ps); dispatch.cpp requires F16C for this table.
#pragma GCC target("f16c")

namespace pagedserve::kernels {
namespace {

// Lanes i < n set (all bits), for maskload/maskstore; n in [0, 8].
inline __m256i tail_mask(int n) {
  alignas(64) static constexpr std::int32_t bits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits + 8 - n));
}

// Eight weights as fp32: full loads and the zero-padded tail (n lanes of p, mask m of tail_mask(n)).
struct load_f32 {
  using elem = float;
  static __m256 full(const float* p) { return _mm256_loadu_ps(p); }
  static __m256 tail(const float* p, int, __m256i m) { return _mm256_maskload_ps(p, m); }
};

// 16-bit tails have no masked load in AVX2: copy the n live halves into a zeroed buffer.
inline __m128i load_u16_tail(const std::uint16_t* p, int n) {
  alignas(16) std::uint16_t buf[8] = {};
  std::memcpy(buf, p, static_cast<std::size_t>(n) * sizeof(std::uint16_t));
  return _mm_load_si128(reinterpret_cast<const __m128i*>(buf));
}

// bf16 is the high half of an fp32: zero-extend and shift left 16.
inline __m256 widen_bf16(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }

struct load_bf16 {
  using elem = std::uint16_t;
  static __m256 full(const std::uint16_t* p) { return widen_bf16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static __m256 tail(const std::uint16_t* p, int n, __m256i) { return widen_bf16(load_u16_tail(p, n)); }
};

struct load_f16 {
  using elem = std::uint16_t;
  static __m256 full(const std::uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static __m256 tail(const std::uint16_t* p, int n, __m256i) { return _mm256_cvtph_ps(load_u16_tail(p, n)); }
};

// The q8 K/V cache: int8 widened exactly (its row scale is applied by attend_group_generic).
struct load_i8 {
  using elem = std::int8_t;
  static __m256 full(const std::int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static __m256 tail(const std::int8_t* p, int n, __m256i) {
    std::int8_t b[8] = {};
    std::copy_n(p, n, b);
    return full(b);
  }
};

// The fp8 K/V caches (scale 1.0), through fp16: e5m2 is an fp16's high byte; e4m3's 7 exponent and
// mantissa bits shifted left 7 (sign kept) are an fp16 of 2^-8 times its value (bias 15 against 7),
// subnormals included, so one exact multiply by 2^8 restores it.
inline __m128i load_u8_8(const std::uint8_t* p) { return _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
inline __m128i load_u8_tail(const std::uint8_t* p, int n) {
  std::uint8_t b[8] = {};
  std::copy_n(p, n, b);
  return load_u8_8(b);
}
inline __m256 widen_e5m2(__m128i w) { return _mm256_cvtph_ps(_mm_slli_epi16(w, 8)); }
inline __m256 widen_e4m3(__m128i w) {
  const __m128i h = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(w, _mm_set1_epi16(0x80)), 8),
                                 _mm_slli_epi16(_mm_and_si128(w, _mm_set1_epi16(0x7f)), 7));
  return _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
}
struct load_e4m3 {
  using elem = fp8_e4m3;
  static __m256 full(const fp8_e4m3* p) { return widen_e4m3(load_u8_8(&p->bits)); }
  static __m256 tail(const fp8_e4m3* p, int n, __m256i) { return widen_e4m3(load_u8_tail(&p->bits, n)); }
};
struct load_e5m2 {
  using elem = fp8_e5m2;
  static __m256 full(const fp8_e5m2* p) { return widen_e5m2(load_u8_8(&p->bits)); }
  static __m256 tail(const fp8_e5m2* p, int n, __m256i) { return widen_e5m2(load_u8_tail(&p->bits, n)); }
};

// The one horizontal reduction every matmul element goes through: lanes (i, i+4), then (i, i+2), then (0, 1).
inline float reduce8(__m256 v) {
  const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
  return _mm_cvtss_f32(_mm_add_ss(h2, _mm_movehdup_ps(h2)));
}

// Four accumulators reduced at once with the same pairs of reduce8() (float addition commutes, so
// the lane arrangement does not change a bit): returns [r(a), r(b), r(c), r(d)].
inline __m128 reduce8x4(__m256 a, __m256 b, __m256 c, __m256 d) {
  // Level 1 (i, i+4): [a_lo | b_lo] + [a_hi | b_hi].
  const __m256 ab = _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
  const __m256 cd = _mm256_add_ps(_mm256_permute2f128_ps(c, d, 0x20), _mm256_permute2f128_ps(c, d, 0x31));
  // Level 2 (i, i+2): per 128-bit lane [a0 a1 c0 c1] + [a2 a3 c2 c3] (and b, d in the high lane).
  const __m256 l2 = _mm256_add_ps(_mm256_shuffle_ps(ab, cd, 0x44), _mm256_shuffle_ps(ab, cd, 0xEE));
  // Level 3 (0, 1): [a c a c | b d b d].
  const __m256 l3 = _mm256_hadd_ps(l2, l2);
  return _mm_unpacklo_ps(_mm256_castps256_ps128(l3), _mm256_extractf128_ps(l3, 1));
}

// n_t tokens x n_r weight rows: out[t, o] for t in [0, n_t), o in [o0, o0 + n_r).
template <class L, int n_t, int n_r>
void matmul_tile(float* out, const float* x, const typename L::elem* w, int n_in, int n_out, int o0) {
  __m256 acc[n_t][n_r];
#pragma GCC unroll 8
  for (int t = 0; t < n_t; ++t)
#pragma GCC unroll 8
    for (int r = 0; r < n_r; ++r) acc[t][r] = _mm256_setzero_ps();
  const typename L::elem* w0 = w + static_cast<std::size_t>(o0) * n_in;
  int k = 0;
  for (; k + 8 <= n_in; k += 8) {
    __m256 wv[n_r];
#pragma GCC unroll 8
    for (int r = 0; r < n_r; ++r) wv[r] = L::full(w0 + static_cast<std::size_t>(r) * n_in + k);
#pragma GCC unroll 8
    for (int t = 0; t < n_t; ++t) {
      const __m256 xv = _mm256_loadu_ps(x + static_cast<std::size_t>(t) * n_in + k);
#pragma GCC unroll 8
      for (int r = 0; r < n_r; ++r) acc[t][r] = _mm256_fmadd_ps(xv, wv[r], acc[t][r]);
    }
  }
  if (k < n_in) {
    const __m256i m = tail_mask(n_in - k);
    __m256 wv[n_r];
#pragma GCC unroll 8
    for (int r = 0; r < n_r; ++r) wv[r] = L::tail(w0 + static_cast<std::size_t>(r) * n_in + k, n_in - k, m);
#pragma GCC unroll 8
    for (int t = 0; t < n_t; ++t) {
      const __m256 xv = _mm256_maskload_ps(x + static_cast<std::size_t>(t) * n_in + k, m);
#pragma GCC unroll 8
      for (int r = 0; r < n_r; ++r) acc[t][r] = _mm256_fmadd_ps(xv, wv[r], acc[t][r]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < n_t; ++t) {
    float* ot = out + static_cast<std::size_t>(t) * n_out + o0;
    int r = 0;
    if constexpr (n_r >= 4) {
#pragma GCC unroll 2
      for (; r + 4 <= n_r; r += 4)
        _mm_storeu_ps(ot + r, reduce8x4(acc[t][r], acc[t][r + 1], acc[t][r + 2], acc[t][r + 3]));
    }
#pragma GCC unroll 4
    for (; r < n_r; ++r) ot[r] = reduce8(acc[t][r]);
  }
}

// Row tile width for a group of n_t tokens, keeping accumulators + weight vectors + one x vector
// within 16 ymm: 8 chains for decode, 2 x 4 and 3 x 3 for batches.
template <int n_t>
constexpr int rows_per_tile = n_t == 1 ? 8 : n_t == 2 ? 4 : 3;

template <class L>
using tile_fn = void (*)(float*, const float*, const typename L::elem*, int, int, int);

template <class L, int n_t, int... r>
constexpr tile_fn<L> tile_for_rows(int n_r, std::integer_sequence<int, r...>) {
  constexpr tile_fn<L> fns[] = {matmul_tile<L, n_t, r + 1>...};
  return fns[n_r - 1];
}

// All rows [o_begin, o_end) for one group of n_t tokens starting at x.
template <class L, int n_t>
void matmul_token_group(float* out, const float* x, const typename L::elem* w, int n_in, int n_out, int o_begin,
                        int o_end) {
  constexpr int n_r = rows_per_tile<n_t>;
  int o = o_begin;
  for (; o + n_r <= o_end; o += n_r) matmul_tile<L, n_t, n_r>(out, x, w, n_in, n_out, o);
  if (o < o_end)
    tile_for_rows<L, n_t>(o_end - o, std::make_integer_sequence<int, n_r - 1>{})(out, x, w, n_in, n_out, o);
}

template <class L>
void matmul_rows_avx2(float* out, const float* x, const typename L::elem* w, int n_tokens, int n_in, int n_out,
                      int o_begin, int o_end) {
  // Blocks of weight rows small enough to stay in L2 while every token group passes over them.
  const int row_block =
      std::max(8, (256 * 1024 / static_cast<int>(sizeof(typename L::elem)) / std::max(n_in, 1)) & ~7);
  for (int ob = o_begin; ob < o_end; ob += row_block) {
    const int oe = std::min(o_end, ob + row_block);
    int t = 0;
    for (; t + 3 <= n_tokens; t += 3)
      matmul_token_group<L, 3>(out + static_cast<std::size_t>(t) * n_out, x + static_cast<std::size_t>(t) * n_in,
                               w, n_in, n_out, ob, oe);
    float* ot = out + static_cast<std::size_t>(t) * n_out;
    const float* xt = x + static_cast<std::size_t>(t) * n_in;
    switch (n_tokens - t) {
      case 2: matmul_token_group<L, 2>(ot, xt, w, n_in, n_out, ob, oe); break;
      case 1: matmul_token_group<L, 1>(ot, xt, w, n_in, n_out, ob, oe); break;
      default: break;
    }
  }
}

// Four accumulators so long reductions are not bound by FMA latency. b is read through L (fp32, or
// the fp16 K/V cache widened exactly).
template <class L>
float dot_avx2(const float* a, const typename L::elem* b, int n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  int i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), L::full(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), L::full(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), L::full(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), L::full(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), L::full(b + i), s0);
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), L::tail(b + i, n - i, m), s1);
  }
  return reduce8(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

float sum_squares_avx2(const float* x, int n) { return dot_avx2<load_f32>(x, x, n); }

// Same two roundings as the reference: weight * (scale * x).
void scale_mul_avx2(float* out, const float* x, const float* weight, float scale, int n) {
  const __m256 s = _mm256_set1_ps(scale);
  int i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(weight + i), _mm256_mul_ps(s, _mm256_loadu_ps(x + i))));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(out + i, m,
                        _mm256_mul_ps(_mm256_maskload_ps(weight + i, m), _mm256_mul_ps(s, _mm256_maskload_ps(x + i, m))));
  }
}

template <class L>
void axpy_avx2(float* y, float a, const typename L::elem* x, int n) {
  const __m256 av = _mm256_set1_ps(a);
  int i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, L::full(x + i), _mm256_loadu_ps(y + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, _mm256_fmadd_ps(av, L::tail(x + i, n - i, m), _mm256_maskload_ps(y + i, m)));
  }
}

void attend_group_avx2(float* acc, float* row_max, float* row_sum, const float* q, const kv_group& g, int j0, int n,
                       int head_size, float scale, float* scores) {
  switch (g.type) {
    case dtype::f16:
      return attend_group_generic<std::uint16_t, dot_avx2<load_f16>, axpy_avx2<load_f16>>(
          acc, row_max, row_sum, q, g, j0, n, head_size, scale, scores);
    case dtype::i8:
      return attend_group_generic<std::int8_t, dot_avx2<load_i8>, axpy_avx2<load_i8>>(acc, row_max, row_sum, q, g, j0,
                                                                                      n, head_size, scale, scores);
    case dtype::f8_e4m3:
      return attend_group_generic<fp8_e4m3, dot_avx2<load_e4m3>, axpy_avx2<load_e4m3>>(acc, row_max, row_sum, q, g, j0,
                                                                                      n, head_size, scale, scores);
    case dtype::f8_e5m2:
      return attend_group_generic<fp8_e5m2, dot_avx2<load_e5m2>, axpy_avx2<load_e5m2>>(acc, row_max, row_sum, q, g, j0,
                                                                                      n, head_size, scale, scores);
    default:
      return attend_group_generic<float, dot_avx2<load_f32>, axpy_avx2<load_f32>>(acc, row_max, row_sum, q, g, j0, n,
                                                                                  head_size, scale, scores);
  }
}

void f32_to_f16_row_avx2(std::uint16_t* out, const float* x, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) out[i] = f32_to_f16(x[i]);
}

// 2^n for integer-valued n in [-126, 127], built directly in the exponent field.
inline __m256 pow2i(__m256i n) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23)); }

// exp(x) as 2^n * p(r), x = n ln2 + r, |r| <= ln2/2, with Cephes expf's degree-7 polynomial
// (about 1 ulp). The input is clamped to a finite range whose results already over- or underflow;
// 2^n is applied as two halves so n in [-150, 128] rounds once to 0, a denormal or inf, never NaN.
inline __m256 exp_avx2(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-104.0f)), _mm256_set1_ps(89.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);  // ln2 split in hi + lo:
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);       // n * hi is exact
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2i(n1)), pow2i(n2));
}

// silu(g) * up = g / (1 + exp(-g)) * up.
inline __m256 swiglu_vec(__m256 g, __m256 u) {
  const __m256 e = exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), g));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

void swiglu_avx2(float* gate, const float* up, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(gate + i, swiglu_vec(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(gate + i, m, swiglu_vec(_mm256_maskload_ps(gate + i, m), _mm256_maskload_ps(up + i, m)));
  }
}

// GPT-2's gelu_new as in table_avx512.cpp: tanh(u) = 1 - 2 / (exp(2u) + 1).
inline __m256 gelu_tanh_vec(__m256 v) {
  const __m256 v3 = _mm256_mul_ps(_mm256_mul_ps(v, v), v);
  const __m256 u = _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f),
                                 _mm256_add_ps(v, _mm256_mul_ps(_mm256_set1_ps(0.044715f), v3)));
  const __m256 e = exp_avx2(_mm256_add_ps(u, u));
  const __m256 t = _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v), _mm256_add_ps(_mm256_set1_ps(1.0f), t));
}

void gelu_tanh_avx2(float* x, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, gelu_tanh_vec(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(x + i, m, gelu_tanh_vec(_mm256_maskload_ps(x + i, m)));
  }
}

}  // namespace

extern const kernel_table kernel_table_avx2 = {
    isa::avx2, matmul_rows_avx2<load_f32>, matmul_rows_avx2<load_bf16>, matmul_rows_avx2<load_f16>,
    detail::matmul_i8_avx2, detail::quantize_token_u8_avx2,
    sum_squares_avx2, scale_mul_avx2, axpy_avx2<load_f32>, swiglu_avx2,
    attend_group_avx2, attend_group_rows_each<attend_group_avx2>,
    attend_heads_each<attend_group_avx2>, f32_to_f16_row_avx2,
    detail::layernorm_scalar, gelu_tanh_avx2, false, detail::quantize_activations, detail::matmul_blocks_avx2,
};

// The same with the int8 and block-quantized matmuls on AVX-VNNI.
extern const kernel_table kernel_table_avx2_vnni = {
    isa::avx2_vnni, matmul_rows_avx2<load_f32>, matmul_rows_avx2<load_bf16>, matmul_rows_avx2<load_f16>,
    detail::matmul_i8_avx2_vnni, detail::quantize_token_u8_avx2,
    sum_squares_avx2, scale_mul_avx2, axpy_avx2<load_f32>, swiglu_avx2,
    attend_group_avx2, attend_group_rows_each<attend_group_avx2>,
    attend_heads_each<attend_group_avx2>, f32_to_f16_row_avx2,
    detail::layernorm_scalar, gelu_tanh_avx2, false, detail::quantize_activations,
    detail::matmul_blocks_avx2_vnni,
};

}  // namespace pagedserve::kernels
