// The AVX-512 inner loops (compiled with -mavx512f/bw/vl/dq -mfma; called only after CPU detection).
//
// Batch invariance of matmul_rows: every output element out[t, o] owns exactly one zmm accumulator
// that walks k = 0, 16, 32, ... with one FMA per step (the last step masked, lanes past n_in are 0),
// then is folded by the fixed tree of reduce16(). Tiles only choose how many such independent
// chains run side by side, never the order inside one, so any n_tokens, token position or row range
// gives bit-identical results for the same x row and w row. bf16 and fp16 weights go through the
// same template, widened exactly to fp32 before the FMA, so they give the fp32 path's bits (AVX-512
// BF16's vdpbf16ps is not used: it would round x to bf16 and pair the products differently).
// The int8 matmul and activation quantizer live in int8_avx512*.cpp.
// GCC 12's avx512fintrin.h builds its pass-through operands from _mm512_undefined_ps(), which
// -Wuninitialized flags once inlined (GCC PR 105593, fixed in 12.3/13); the warning is spurious.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "pagedserve/kernels.hpp"
#include "attend_group.hpp"
#include "avx512_reduce.hpp"
#include "bf16_dot_kernels.hpp"
#include "block_kernels.hpp"
#include "int8_kernels.hpp"
#include "layernorm_gelu.hpp"

namespace pagedserve::kernels {
namespace {

// Sixteen weights as fp32: full loads and zero-padded tails (mask m). bf16 is the high half of an
// fp32 (zero-extend, shift left 16); fp16 widens with vcvtph2ps. Both conversions are exact.
struct load_f32 {
  using elem = float;
  static __m512 full(const float* p) { return _mm512_loadu_ps(p); }
  static __m512 tail(__mmask16 m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
};

inline __m512 widen_bf16(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }

struct load_bf16 {
  using elem = std::uint16_t;
  static __m512 full(const std::uint16_t* p) { return widen_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static __m512 tail(__mmask16 m, const std::uint16_t* p) { return widen_bf16(_mm256_maskz_loadu_epi16(m, p)); }
};

struct load_f16 {
  using elem = std::uint16_t;
  static __m512 full(const std::uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static __m512 tail(__mmask16 m, const std::uint16_t* p) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
};

// The q8 K/V cache: int8 widened exactly (its row scale is applied by the attention kernel).
struct load_i8 {
  using elem = std::int8_t;
  static __m512 full(const std::int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static __m512 tail(__mmask16 m, const std::int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p)));
  }
};

// The fp8 K/V caches (scale 1.0), through fp16: e5m2 is an fp16's high byte; e4m3's 7 exponent and
// mantissa bits shifted left 7 (sign kept) are an fp16 of 2^-8 times its value (bias 15 against 7),
// subnormals included, so one exact multiply by 2^8 restores it.
inline __m512 widen_e5m2(__m256i w) { return _mm512_cvtph_ps(_mm256_slli_epi16(w, 8)); }
inline __m512 widen_e4m3(__m256i w) {
  const __m256i h = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(w, _mm256_set1_epi16(0x80)), 8),
                                    _mm256_slli_epi16(_mm256_and_si256(w, _mm256_set1_epi16(0x7f)), 7));
  return _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f));
}
inline __m256i load_u8_16(const std::uint8_t* p) { return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256i load_u8_tail(__mmask16 m, const std::uint8_t* p) { return _mm256_cvtepu8_epi16(_mm_maskz_loadu_epi8(m, p)); }
struct load_e4m3 {
  using elem = fp8_e4m3;
  static __m512 full(const fp8_e4m3* p) { return widen_e4m3(load_u8_16(&p->bits)); }
  static __m512 tail(__mmask16 m, const fp8_e4m3* p) { return widen_e4m3(load_u8_tail(m, &p->bits)); }
};
struct load_e5m2 {
  using elem = fp8_e5m2;
  static __m512 full(const fp8_e5m2* p) { return widen_e5m2(load_u8_16(&p->bits)); }
  static __m512 tail(__mmask16 m, const fp8_e5m2* p) { return widen_e5m2(load_u8_tail(m, &p->bits)); }
};

// n_t tokens x n_r weight rows: out[t, o] for t in [0, n_t), o in [o0, o0 + n_r).
template <class L, int n_t, int n_r, bool prefetch = false>
void matmul_tile(float* out, const float* x, const typename L::elem* w, int n_in, int n_out, int o0) {
  __m512 acc[n_t][n_r];
#pragma GCC unroll 8
  for (int t = 0; t < n_t; ++t)
#pragma GCC unroll 8
    for (int r = 0; r < n_r; ++r) acc[t][r] = _mm512_setzero_ps();
  const typename L::elem* wr[n_r];
  for (int r = 0; r < n_r; ++r) wr[r] = w + static_cast<std::size_t>(o0 + r) * n_in;
  // The next n_r rows (the next tile, here or in the range the thread usually runs next) go to L2
  // while these stream: n_r short row streams alone ramp the hardware prefetcher up too late for
  // batch-1 decode to run at memory speed. Past the matrix's end a prefetch is a no-op, not a fault.
  // One prefetch per 64-byte line: every step for fp32, every other one for 2-byte weights.
  const std::size_t next_tile = static_cast<std::size_t>(n_r) * n_in;
  constexpr int prefetch_every = 64 / (16 * static_cast<int>(sizeof(typename L::elem)));
  int k = 0;
  for (; k + 16 <= n_in; k += 16) {
    __m512 wv[n_r];
    const bool fetch_line = prefetch && (k / 16) % prefetch_every == 0;
#pragma GCC unroll 8
    for (int r = 0; r < n_r; ++r) {
      if (fetch_line) _mm_prefetch(reinterpret_cast<const char*>(wr[r] + next_tile + k), _MM_HINT_T1);
      wv[r] = L::full(wr[r] + k);
    }
#pragma GCC unroll 8
    for (int t = 0; t < n_t; ++t) {
      const __m512 xv = _mm512_loadu_ps(x + static_cast<std::size_t>(t) * n_in + k);
#pragma GCC unroll 8
      for (int r = 0; r < n_r; ++r) acc[t][r] = _mm512_fmadd_ps(xv, wv[r], acc[t][r]);
    }
  }
  if (k < n_in) {
    const __mmask16 m = tail_mask(n_in - k);
    __m512 wv[n_r];
#pragma GCC unroll 8
    for (int r = 0; r < n_r; ++r) wv[r] = L::tail(m, wr[r] + k);
#pragma GCC unroll 8
    for (int t = 0; t < n_t; ++t) {
      const __m512 xv = _mm512_maskz_loadu_ps(m, x + static_cast<std::size_t>(t) * n_in + k);
#pragma GCC unroll 8
      for (int r = 0; r < n_r; ++r) acc[t][r] = _mm512_fmadd_ps(xv, wv[r], acc[t][r]);
    }
  }
  store_reduced(out, n_out, o0, acc);
}

// Row tile width for a group of n_t tokens: eight rows for 1-2 tokens (eight weight streams and
// enough independent FMA chains to run at memory bandwidth), six for 3-4 tokens (24 accumulators +
// 6 weight vectors + 1 x vector in 32 zmm; each loaded weight vector feeds four tokens).
template <int n_t>
constexpr int rows_per_tile = n_t <= 2 ? 8 : 6;

template <class L>
using tile_fn = void (*)(float*, const float*, const typename L::elem*, int, int, int);

template <class L, int n_t, int... r>
constexpr tile_fn<L> tile_for_rows(int n_r, std::integer_sequence<int, r...>) {
  constexpr tile_fn<L> fns[] = {matmul_tile<L, n_t, r + 1>...};
  return fns[n_r - 1];
}

// All rows [o_begin, o_end) for one group of n_t tokens starting at x. The first group over a block
// of rows streams it from memory and prefetches; later groups find it in L2, where prefetches would
// only take load slots from the FMAs.
template <class L, int n_t>
void matmul_token_group(float* out, const float* x, const typename L::elem* w, int n_in, int n_out, int o_begin,
                        int o_end, bool first) {
  constexpr int n_r = rows_per_tile<n_t>;
  int o = o_begin;
  for (; o + n_r <= o_end; o += n_r) {
    if (first)
      matmul_tile<L, n_t, n_r, true>(out, x, w, n_in, n_out, o);
    else
      matmul_tile<L, n_t, n_r>(out, x, w, n_in, n_out, o);
  }
  if (o < o_end)
    tile_for_rows<L, n_t>(o_end - o, std::make_integer_sequence<int, n_r - 1>{})(out, x, w, n_in, n_out, o);
}

template <class L>
void matmul_rows_avx512(float* out, const float* x, const typename L::elem* w, int n_tokens, int n_in, int n_out,
                        int o_begin, int o_end) {
  // Blocks of weight rows small enough to stay in L2 while every token group passes over them.
  const int row_block =
      std::max(8, (256 * 1024 / static_cast<int>(sizeof(typename L::elem)) / std::max(n_in, 1)) & ~7);
  for (int ob = o_begin; ob < o_end; ob += row_block) {
    const int oe = std::min(o_end, ob + row_block);
    int t = 0;
    for (; t + 4 <= n_tokens; t += 4)
      matmul_token_group<L, 4>(out + static_cast<std::size_t>(t) * n_out, x + static_cast<std::size_t>(t) * n_in,
                               w, n_in, n_out, ob, oe, t == 0);
    float* ot = out + static_cast<std::size_t>(t) * n_out;
    const float* xt = x + static_cast<std::size_t>(t) * n_in;
    switch (n_tokens - t) {
      case 3: matmul_token_group<L, 3>(ot, xt, w, n_in, n_out, ob, oe, t == 0); break;
      case 2: matmul_token_group<L, 2>(ot, xt, w, n_in, n_out, ob, oe, t == 0); break;
      case 1: matmul_token_group<L, 1>(ot, xt, w, n_in, n_out, ob, oe, t == 0); break;
      default: break;
    }
  }
}

// Four accumulators so long reductions are not bound by FMA latency. b is read through L (fp32, or
// the fp16 K/V cache widened exactly).
template <class L>
float dot_avx512(const float* a, const typename L::elem* b, int n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
  int i = 0;
  for (; i + 64 <= n; i += 64) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), L::full(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), L::full(b + i + 16), s1);
    s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), L::full(b + i + 32), s2);
    s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), L::full(b + i + 48), s3);
  }
  for (; i + 16 <= n; i += 16) s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), L::full(b + i), s0);
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), L::tail(m, b + i), s1);
  }
  return reduce16(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

float sum_squares_avx512(const float* x, int n) { return dot_avx512<load_f32>(x, x, n); }

// Same two roundings as the reference: weight * (scale * x).
void scale_mul_avx512(float* out, const float* x, const float* weight, float scale, int n) {
  const __m512 s = _mm512_set1_ps(scale);
  int i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_loadu_ps(weight + i), _mm512_mul_ps(s, _mm512_loadu_ps(x + i))));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(out + i, m,
                          _mm512_mul_ps(_mm512_maskz_loadu_ps(m, weight + i), _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, x + i))));
  }
}

template <class L>
void axpy_avx512(float* y, float a, const typename L::elem* x, int n) {
  const __m512 av = _mm512_set1_ps(a);
  int i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(av, L::full(x + i), _mm512_loadu_ps(y + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(av, L::tail(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}

void f32_to_f16_row_avx512(std::uint16_t* out, const float* x, int n) {
  constexpr int round = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  int i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtps_ph(_mm512_loadu_ps(x + i), round));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm256_mask_storeu_epi16(out + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), round));
  }
}

// exp(x) as 2^n * p(r), x = n ln2 + r, |r| <= ln2/2, with Cephes expf's degree-7 polynomial
// (about 1 ulp). The input is clamped to a finite range whose results already over- or underflow,
// and scalef applies 2^n without building an exponent, so large |x| gives inf or 0, never NaN.
inline __m512 exp_avx512(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(89.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);  // ln2 split in hi + lo:
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);       // n * hi is exact
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

// silu(g) * up = g / (1 + exp(-g)) * up.
inline __m512 swiglu_vec(__m512 g, __m512 u) {
  const __m512 e = exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), g));
  return _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), u);
}

void swiglu_avx512(float* gate, const float* up, int n) {
  int i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(gate + i, swiglu_vec(_mm512_loadu_ps(gate + i), _mm512_loadu_ps(up + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(gate + i, m, swiglu_vec(_mm512_maskz_loadu_ps(m, gate + i), _mm512_maskz_loadu_ps(m, up + i)));
  }
}

// GPT-2's gelu_new, 0.5 v (1 + tanh(u)) with u = sqrt(2/pi) (v + 0.044715 v^3), and tanh(u) as
// 1 - 2 / (exp(2u) + 1): exp's clamp makes it exactly +-1 far out, never NaN.
inline __m512 gelu_tanh_vec(__m512 v) {
  const __m512 v3 = _mm512_mul_ps(_mm512_mul_ps(v, v), v);
  const __m512 u = _mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f),
                                 _mm512_add_ps(v, _mm512_mul_ps(_mm512_set1_ps(0.044715f), v3)));
  const __m512 e = exp_avx512(_mm512_add_ps(u, u));
  const __m512 t = _mm512_sub_ps(_mm512_set1_ps(1.0f), _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v), _mm512_add_ps(_mm512_set1_ps(1.0f), t));
}

void gelu_tanh_avx512(float* x, int n) {
  int i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, gelu_tanh_vec(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, m, gelu_tanh_vec(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

// Sixteen accumulators reduced at once with the same pairs of reduce16(): lane i of the result is
// reduce16(p[i]), bit for bit, at 30 shuffles and 15 adds for all sixteen.
inline __m512 reduce16x16(const __m512 (&p)[16]) {
  __m512 l1[8], l2[4], l3[2];
#pragma GCC unroll 16
  for (int i = 0; i < 8; ++i)  // (i, i+8): [x_lo | y_lo] + [x_hi | y_hi]
    l1[i] = _mm512_add_ps(_mm512_shuffle_f32x4(p[2 * i], p[2 * i + 1], 0x44),
                          _mm512_shuffle_f32x4(p[2 * i], p[2 * i + 1], 0xEE));
#pragma GCC unroll 16
  for (int i = 0; i < 4; ++i)  // (i, i+4): 128-bit lane c of l2[i] belongs to accumulator 4i + c
    l2[i] = _mm512_add_ps(_mm512_shuffle_f32x4(l1[2 * i], l1[2 * i + 1], 0x88),
                          _mm512_shuffle_f32x4(l1[2 * i], l1[2 * i + 1], 0xDD));
#pragma GCC unroll 16
  for (int i = 0; i < 2; ++i)  // (i, i+2): lane c of l3[i] holds accumulators 8i + c and 8i + 4 + c
    l3[i] = _mm512_add_ps(_mm512_shuffle_ps(l2[2 * i], l2[2 * i + 1], 0x44),
                          _mm512_shuffle_ps(l2[2 * i], l2[2 * i + 1], 0xEE));
  // (0, 1): element m of 128-bit lane c holds accumulator c + 4m; put each at its own index.
  const __m512 l4 = _mm512_add_ps(_mm512_shuffle_ps(l3[0], l3[1], 0x88), _mm512_shuffle_ps(l3[0], l3[1], 0xDD));
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), l4);
}

// The weights pass of a group's softmax step: scores[j0, n) become exp(score - new_max) in place (16
// at a time, exp_avx512); returns their sum, reduced in one fixed order.
inline float attend_weights(float* scores, int j0, int n, float new_max) {
  __m512 w_sum = _mm512_setzero_ps();
  for (int j = j0; j < n; j += 16) {
    const __mmask16 m = tail_mask(std::min(16, n - j));
    const __m512 w = exp_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, scores + j), _mm512_set1_ps(new_max)));
    _mm512_mask_storeu_ps(scores + j, m, w);
    w_sum = _mm512_mask_add_ps(w_sum, m, w_sum, w);
  }
  return reduce16(w_sum);
}

// The scaled scores of `count` <= 16 keys from the cursor on (advanced past them) in lanes [0, count),
// zeros above: one mul + fma chain per key, reduce16x16, the q8 rows' scales, then `scale`.
template <class L, int NV>
inline __m512 attend_scores_chunk(const __m512 (&qv)[NV], const kv_group& g, kv_group_cursor& at, int count,
                                  float scale) {
  using elem = typename L::elem;
  constexpr bool scaled = std::is_same_v<elem, std::int8_t>;
  constexpr int head_size = 16 * NV;
  __m512 p[16];
  alignas(64) float k_scale[16];
  // The chunk's scales are one load when it lies in one block (the usual case), else gathered one by one.
  const float* chunk_scales = scaled && at.slot + count <= g.block_size ? g.k_scales[at.block] + at.slot : k_scale;
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    if (i >= count) {
      p[i] = _mm512_setzero_ps();
      continue;
    }
    const elem* kj = at.row<elem>(g.k, head_size);
    if constexpr (scaled)
      if (chunk_scales == k_scale) k_scale[i] = g.k_scales[at.block][at.slot];
    at.next(g);
    p[i] = _mm512_mul_ps(qv[0], L::full(kj));
#pragma GCC unroll 16
    for (int c = 1; c < NV; ++c) p[i] = _mm512_fmadd_ps(qv[c], L::full(kj + 16 * c), p[i]);
  }
  __m512 dots = reduce16x16(p);
  if constexpr (scaled) dots = _mm512_mul_ps(dots, _mm512_maskz_loadu_ps(tail_mask(count), chunk_scales));
  return _mm512_mul_ps(dots, _mm512_set1_ps(scale));
}

// The values pass of one row over keys [j, end) of g: a += weight * V row, key by key in increasing
// order (int8 rows times their scales), weights[j] being key j's. per_key, when given, is advanced by
// each row read (attend_group_registers); attend_heads_registers advances its stream once a chunk.
template <class L, int NV>
inline void attend_values(__m512 (&a)[NV], const kv_group& g, int j, int end, const float* weights,
                          kv_prefetch_stream* per_key) {
  using elem = typename L::elem;
  constexpr bool scaled = std::is_same_v<elem, std::int8_t>;
  constexpr int head_size = 16 * NV;
  constexpr std::size_t row_bytes = head_size * sizeof(elem) + (scaled ? sizeof(float) : 0);
  for (kv_group_cursor at(g, j); j < end; ++j, at.next(g)) {
    if (per_key) per_key->advance(row_bytes);
    float wj = weights[j];
    if constexpr (scaled) wj *= g.v_scales[at.block][at.slot];
    const __m512 w = _mm512_set1_ps(wj);
    const elem* vj = at.row<elem>(g.v, head_size);
#pragma GCC unroll 16
    for (int c = 0; c < NV; ++c) a[c] = _mm512_fmadd_ps(w, L::full(vj + 16 * c), a[c]);
  }
}

// attend_group with head_size = 16 * NV: q and the accumulator stay in registers across the group's
// keys; scores are reduced 16 keys at a time (reduce16x16) and their weights exponentiated 16 at a
// time (exp_avx512, about 1 ulp from std::exp). K and V are read through L (fp32, fp16, fp8 or int8; int8
// rows times their scales).
template <class L, int NV>
void attend_group_registers(float* acc, float* row_max, float* row_sum, const float* q, const kv_group& g, int j0,
                            int n, float scale, float* scores) {
  using elem = typename L::elem;
  constexpr bool scaled = std::is_same_v<elem, std::int8_t>;
  constexpr int head_size = 16 * NV;  // also the distance between a head's keys (values) in a block
  constexpr std::size_t row_bytes = head_size * sizeof(elem) + (scaled ? sizeof(float) : 0);
  __m512 qv[NV], a[NV];
#pragma GCC unroll 16
  for (int c = 0; c < NV; ++c) qv[c] = _mm512_loadu_ps(q + 16 * c);
  __m512 max_v = _mm512_set1_ps(-INFINITY);
  kv_group_cursor at(g, j0);
  for (int jb = j0; jb < n; jb += 16) {
    const int count = std::min(16, n - jb);
    if (g.ahead) g.ahead->advance(count * row_bytes);
    const __mmask16 m = tail_mask(count);
    const __m512 s = attend_scores_chunk<L, NV>(qv, g, at, count, scale);
    _mm512_mask_storeu_ps(scores + jb, m, s);
    max_v = _mm512_mask_max_ps(max_v, m, max_v, s);
  }
  const float group_max = _mm512_reduce_max_ps(max_v);
#pragma GCC unroll 16
  for (int c = 0; c < NV; ++c) a[c] = _mm512_loadu_ps(acc + 16 * c);
  const float new_max = std::max(*row_max, group_max);
  if (new_max > *row_max) {
    const float rescale = std::exp(*row_max - new_max);  // 0 for the first group
    *row_sum *= rescale;
#pragma GCC unroll 16
    for (int c = 0; c < NV; ++c) a[c] = _mm512_mul_ps(a[c], _mm512_set1_ps(rescale));
    *row_max = new_max;
  }
  *row_sum += attend_weights(scores, j0, n, new_max);
  attend_values<L, NV>(a, g, j0, n, scores, g.ahead);
#pragma GCC unroll 16
  for (int c = 0; c < NV; ++c) _mm512_storeu_ps(acc + 16 * c, a[c]);
}

template <class L>
void attend_group_typed(float* acc, float* row_max, float* row_sum, const float* q, const kv_group& g, int j0, int n,
                        int head_size, float scale, float* scores) {
  switch (head_size) {
    case 64: return attend_group_registers<L, 4>(acc, row_max, row_sum, q, g, j0, n, scale, scores);
    case 128: return attend_group_registers<L, 8>(acc, row_max, row_sum, q, g, j0, n, scale, scores);
    default:
      return attend_group_generic<typename L::elem, dot_avx512<L>, axpy_avx512<L>>(acc, row_max, row_sum, q, g, j0, n,
                                                                                    head_size, scale, scores);
  }
}

void attend_group_avx512(float* acc, float* row_max, float* row_sum, const float* q, const kv_group& g, int j0, int n,
                         int head_size, float scale, float* scores) {
  switch (g.type) {
    case dtype::f16: return attend_group_typed<load_f16>(acc, row_max, row_sum, q, g, j0, n, head_size, scale, scores);
    case dtype::i8: return attend_group_typed<load_i8>(acc, row_max, row_sum, q, g, j0, n, head_size, scale, scores);
    case dtype::f8_e4m3: return attend_group_typed<load_e4m3>(acc, row_max, row_sum, q, g, j0, n, head_size, scale, scores);
    case dtype::f8_e5m2: return attend_group_typed<load_e5m2>(acc, row_max, row_sum, q, g, j0, n, head_size, scale, scores);
    default: return attend_group_typed<load_f32>(acc, row_max, row_sum, q, g, j0, n, head_size, scale, scores);
  }
}

// The middle of a group's softmax step for rows whose scores are in memory (row r's at scores + r *
// stride): per row its max over its own scores in attend_group_registers' lanes (chunks from its j0), the
// rescale of its accumulator and sum, and its weights (attend_weights): attend_group_registers' own
// instructions in the same order.
template <int NV>
void attend_rows_softmax(const attend_row* rows, int n_rows, int stride, float* scores) {
  for (int r = 0; r < n_rows; ++r) {
    float* sr = scores + r * stride;
    const int j0 = rows[r].j0, n = rows[r].n;
    __m512 max_v = _mm512_set1_ps(-INFINITY);
    for (int j = j0; j < n; j += 16) {
      const __mmask16 m = tail_mask(std::min(16, n - j));
      max_v = _mm512_mask_max_ps(max_v, m, max_v, _mm512_maskz_loadu_ps(m, sr + j));
    }
    const float new_max = std::max(*rows[r].max, _mm512_reduce_max_ps(max_v));
    if (new_max > *rows[r].max) {
      const float rescale = std::exp(*rows[r].max - new_max);  // 0 for the first group
      *rows[r].sum *= rescale;
#pragma GCC unroll 16
      for (int c = 0; c < NV; ++c)
        _mm512_storeu_ps(rows[r].acc + 16 * c, _mm512_mul_ps(_mm512_loadu_ps(rows[r].acc + 16 * c), _mm512_set1_ps(rescale)));
      *rows[r].max = new_max;
    }
    *rows[r].sum += attend_weights(sr, j0, n, new_max);
  }
}

// The values pass of attend_group_rows_registers for R rows whose weights are in scores (row r's at
// scores + r * stride): each V row is loaded once for the R rows, whose R * NV accumulator chains run
// interleaved; row r still adds its keys j0 <= j < n in increasing order, as attend_group_registers.
template <class L, int NV, int R>
void attend_values_rows(const attend_row* rows, const kv_group& g, int stride, const float* scores,
                        kv_prefetch_stream* ahead) {
  using elem = typename L::elem;
  constexpr bool scaled = std::is_same_v<elem, std::int8_t>;
  constexpr int head_size = 16 * NV;
  constexpr std::size_t row_bytes = head_size * sizeof(elem) + (scaled ? sizeof(float) : 0);
  int lo = rows[0].j0, hi = rows[0].n;
  __m512 a[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    lo = std::min(lo, rows[r].j0), hi = std::max(hi, rows[r].n);
#pragma GCC unroll 16
    for (int c = 0; c < NV; ++c) a[r][c] = _mm512_loadu_ps(rows[r].acc + 16 * c);
  }
  kv_group_cursor at(g, lo);
  for (int j = lo; j < hi; ++j, at.next(g)) {
    if (ahead) ahead->advance(row_bytes);
    const elem* vj = at.row<elem>(g.v, head_size);
    __m512 v[NV];
#pragma GCC unroll 16
    for (int c = 0; c < NV; ++c) v[c] = L::full(vj + 16 * c);
    const float v_scale = scaled ? g.v_scales[at.block][at.slot] : 1.0f;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      if (j < rows[r].j0 || j >= rows[r].n) continue;
      float wj = scores[r * stride + j];
      if constexpr (scaled) wj *= v_scale;
      const __m512 w = _mm512_set1_ps(wj);
#pragma GCC unroll 16
      for (int c = 0; c < NV; ++c) a[r][c] = _mm512_fmadd_ps(w, v[c], a[r][c]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < NV; ++c) _mm512_storeu_ps(rows[r].acc + 16 * c, a[r][c]);
}

// attend_group_rows with head_size = 16 * NV, each row's arithmetic that of attend_group_registers:
// per 16 keys of the rows' union range, every row's scores (the chunk's K comes from memory once and
// from L1 for the other rows; a key's dot does not depend on the chunk it is in); then per row its max
// and weights in attend_group_registers' own lanes (chunks from its j0); then the values, rows_per_pass
// rows at a time. Registers: rows_per_pass * NV accumulators + NV values.
template <class L, int NV>
void attend_group_rows_registers(const attend_row* rows, int n_rows, const kv_group& g, float scale, float* scores) {
  using elem = typename L::elem;
  constexpr bool scaled = std::is_same_v<elem, std::int8_t>;
  constexpr int head_size = 16 * NV;
  constexpr std::size_t row_bytes = head_size * sizeof(elem) + (scaled ? sizeof(float) : 0);
  if (n_rows == 1)  // one row (MHA decode): nothing to interleave, and no pass through memory between phases
    return attend_group_registers<L, NV>(rows[0].acc, rows[0].max, rows[0].sum, rows[0].q, g, rows[0].j0, rows[0].n,
                                         scale, scores);
  const int stride = attend_scores_floats(g.block_size);
  int lo = rows[0].j0, hi = rows[0].n;
  for (int r = 1; r < n_rows; ++r) lo = std::min(lo, rows[r].j0), hi = std::max(hi, rows[r].n);
  kv_group_cursor at(g, lo);
  for (int jb = lo; jb < hi; jb += 16) {
    const int count = std::min(16, hi - jb);
    if (g.ahead) g.ahead->advance(count * row_bytes);
    // The chunk's keys as fp32: fp16, fp8 and int8 rows are widened (exactly) once here rather than once a row.
    const float* k[16];
    alignas(64) float k_wide[std::is_same_v<elem, float> ? 1 : 16 * head_size];
    alignas(64) float k_scale[16];
    for (int i = 0; i < count; ++i, at.next(g)) {
      const elem* kj = at.row<elem>(g.k, head_size);
      if constexpr (std::is_same_v<elem, float>) {
        k[i] = kj;
      } else {
        k[i] = k_wide + i * head_size;
#pragma GCC unroll 16
        for (int c = 0; c < NV; ++c) _mm512_store_ps(k_wide + i * head_size + 16 * c, L::full(kj + 16 * c));
      }
      if constexpr (scaled) k_scale[i] = g.k_scales[at.block][at.slot];
    }
    for (int r = 0; r < n_rows; ++r) {
      const int first = std::max(rows[r].j0, jb) - jb, end = std::min(rows[r].n, jb + count) - jb;  // its lanes
      if (first >= end) continue;
      __m512 qv[NV], p[16];
#pragma GCC unroll 16
      for (int c = 0; c < NV; ++c) qv[c] = _mm512_loadu_ps(rows[r].q + 16 * c);
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) {
        if (i >= count) {
          p[i] = _mm512_setzero_ps();
          continue;
        }
        p[i] = _mm512_mul_ps(qv[0], _mm512_loadu_ps(k[i]));
#pragma GCC unroll 16
        for (int c = 1; c < NV; ++c) p[i] = _mm512_fmadd_ps(qv[c], _mm512_loadu_ps(k[i] + 16 * c), p[i]);
      }
      __m512 dots = reduce16x16(p);
      if constexpr (scaled) dots = _mm512_mul_ps(dots, _mm512_maskz_load_ps(tail_mask(count), k_scale));
      const __m512 s = _mm512_mul_ps(dots, _mm512_set1_ps(scale));
      _mm512_mask_storeu_ps(scores + r * stride + jb, tail_mask(end) & ~tail_mask(first), s);
    }
  }
  attend_rows_softmax<NV>(rows, n_rows, stride, scores);
  constexpr int rows_per_pass = 16 / NV;
  for (int r0 = 0; r0 < n_rows; r0 += rows_per_pass) {
    // The first pass advances the prefetch stream by the union range, later ones re-read V from cache.
    kv_prefetch_stream* ahead = r0 == 0 ? g.ahead : nullptr;
    const attend_row* rs = rows + r0;
    const float* sc = scores + r0 * stride;
    const int left = std::min(rows_per_pass, n_rows - r0);
    if (ahead && left < n_rows) {
      int lo0 = rs[0].j0, hi0 = rs[0].n;
      for (int r = 1; r < left; ++r) lo0 = std::min(lo0, rs[r].j0), hi0 = std::max(hi0, rs[r].n);
      ahead->advance(static_cast<std::size_t>((hi - lo) - (hi0 - lo0)) * row_bytes);
    }
    if constexpr (rows_per_pass == 4) {
      switch (left) {
        case 4: attend_values_rows<L, NV, 4>(rs, g, stride, sc, ahead); continue;
        case 3: attend_values_rows<L, NV, 3>(rs, g, stride, sc, ahead); continue;
        default: break;
      }
    }
    if (left >= 2) attend_values_rows<L, NV, 2>(rs, g, stride, sc, ahead);
    else attend_values_rows<L, NV, 1>(rs, g, stride, sc, ahead);
  }
}

template <class L>
void attend_group_rows_typed(const attend_row* rows, int n_rows, const kv_group& g, int head_size, float scale,
                             float* scores) {
  switch (head_size) {
    case 64: return attend_group_rows_registers<L, 4>(rows, n_rows, g, scale, scores);
    case 128: return attend_group_rows_registers<L, 8>(rows, n_rows, g, scale, scores);
    default: return attend_group_rows_each<attend_group_typed<L>>(rows, n_rows, g, head_size, scale, scores);
  }
}

void attend_group_rows_avx512(const attend_row* rows, int n_rows, const kv_group& g, int head_size, float scale,
                              float* scores) {
  switch (g.type) {
    case dtype::f16: return attend_group_rows_typed<load_f16>(rows, n_rows, g, head_size, scale, scores);
    case dtype::i8: return attend_group_rows_typed<load_i8>(rows, n_rows, g, head_size, scale, scores);
    case dtype::f8_e4m3: return attend_group_rows_typed<load_e4m3>(rows, n_rows, g, head_size, scale, scores);
    case dtype::f8_e5m2: return attend_group_rows_typed<load_e5m2>(rows, n_rows, g, head_size, scale, scores);
    default: return attend_group_rows_typed<load_f32>(rows, n_rows, g, head_size, scale, scores);
  }
}


// attend_heads with head_size = 16 * NV: rows with their own groups (the kv heads of one sequence over
// the same blocks), walked 16 keys at a time across the rows in the K pass and again in the V pass, so
// the reads go through each block's heads in turn (adjacent runs in the pool) instead of one head's
// blocks after another. Each row's arithmetic is attend_group_registers': the same score chunks from
// its j0 (attend_scores_chunk), attend_rows_softmax, and its values added key by key in increasing
// order (its accumulator passes through memory between chunks, exactly).
template <class L, int NV>
void attend_heads_registers(const attend_row* rows, const kv_group* groups, int n_rows, float scale, float* scores) {
  using elem = typename L::elem;
  constexpr bool scaled = std::is_same_v<elem, std::int8_t>;
  constexpr int head_size = 16 * NV;
  constexpr std::size_t row_bytes = head_size * sizeof(elem) + (scaled ? sizeof(float) : 0);
  kv_prefetch_stream* ahead = groups[0].ahead;
  const int stride = attend_scores_floats(groups[0].block_size);
  for (int k = 0;; ++k) {  // chunk k of every row: keys [j0 + 16k, j0 + 16k + 16)
    bool any = false;
    for (int r = 0; r < n_rows; ++r) {
      const int jb = rows[r].j0 + 16 * k, count = std::min(16, rows[r].n - jb);
      if (count <= 0) continue;
      any = true;
      if (ahead) ahead->advance(count * row_bytes);
      __m512 qv[NV];
#pragma GCC unroll 16
      for (int c = 0; c < NV; ++c) qv[c] = _mm512_loadu_ps(rows[r].q + 16 * c);
      kv_group_cursor at(groups[r], jb);
      _mm512_mask_storeu_ps(scores + r * stride + jb, tail_mask(count), attend_scores_chunk<L, NV>(qv, groups[r], at, count, scale));
    }
    if (!any) break;
  }
  attend_rows_softmax<NV>(rows, n_rows, stride, scores);
  for (int k = 0;; ++k) {
    bool any = false;
    for (int r = 0; r < n_rows; ++r) {
      const int jb = rows[r].j0 + 16 * k, end = std::min(jb + 16, rows[r].n);
      if (jb >= end) continue;
      any = true;
      const kv_group& g = groups[r];
      const float* sr = scores + r * stride;
      __m512 a[NV];
#pragma GCC unroll 16
      for (int c = 0; c < NV; ++c) a[c] = _mm512_loadu_ps(rows[r].acc + 16 * c);
      if (ahead) ahead->advance((end - jb) * row_bytes);
      attend_values<L, NV>(a, g, jb, end, sr, nullptr);
#pragma GCC unroll 16
      for (int c = 0; c < NV; ++c) _mm512_storeu_ps(rows[r].acc + 16 * c, a[c]);
    }
    if (!any) break;
  }
}

template <class L>
void attend_heads_typed(const attend_row* rows, const kv_group* groups, int n_rows, int head_size, float scale,
                        float* scores) {
  switch (head_size) {
    case 64: return attend_heads_registers<L, 4>(rows, groups, n_rows, scale, scores);
    case 128: return attend_heads_registers<L, 8>(rows, groups, n_rows, scale, scores);
    default: return attend_heads_each<attend_group_typed<L>>(rows, groups, n_rows, head_size, scale, scores);
  }
}

void attend_heads_avx512(const attend_row* rows, const kv_group* groups, int n_rows, int head_size, float scale,
                         float* scores) {
  switch (groups[0].type) {
    case dtype::f16: return attend_heads_typed<load_f16>(rows, groups, n_rows, head_size, scale, scores);
    case dtype::i8: return attend_heads_typed<load_i8>(rows, groups, n_rows, head_size, scale, scores);
    case dtype::f8_e4m3: return attend_heads_typed<load_e4m3>(rows, groups, n_rows, head_size, scale, scores);
    case dtype::f8_e5m2: return attend_heads_typed<load_e5m2>(rows, groups, n_rows, head_size, scale, scores);
    default: return attend_heads_typed<load_f32>(rows, groups, n_rows, head_size, scale, scores);
  }
}

}  // namespace

extern const kernel_table kernel_table_avx512 = {
    isa::avx512, matmul_rows_avx512<load_f32>, matmul_rows_avx512<load_bf16>, matmul_rows_avx512<load_f16>,
    detail::matmul_i8_avx512, detail::quantize_token_u8_avx512,
    sum_squares_avx512, scale_mul_avx512, axpy_avx512<load_f32>, swiglu_avx512, attend_group_avx512, attend_group_rows_avx512,
    attend_heads_avx512, f32_to_f16_row_avx512, detail::layernorm_scalar, gelu_tanh_avx512, false,
    detail::quantize_activations_avx512, detail::matmul_blocks_avx512,
};

// The same with the int8 and block-quantized matmuls on AVX512-VNNI.
extern const kernel_table kernel_table_avx512_vnni = {
    isa::avx512_vnni, matmul_rows_avx512<load_f32>, matmul_rows_avx512<load_bf16>, matmul_rows_avx512<load_f16>,
    detail::matmul_i8_avx512_vnni, detail::quantize_token_u8_avx512,
    sum_squares_avx512, scale_mul_avx512, axpy_avx512<load_f32>, swiglu_avx512, attend_group_avx512, attend_group_rows_avx512,
    attend_heads_avx512, f32_to_f16_row_avx512, detail::layernorm_scalar, gelu_tanh_avx512, false,
    detail::quantize_activations_avx512, detail::matmul_blocks_avx512_vnni,
};

// The same with bf16 weights on AVX512-BF16 dot products (bf16_dot_avx512_bf16.cpp).
extern const kernel_table kernel_table_avx512_bf16 = {
    isa::avx512_bf16, matmul_rows_avx512<load_f32>, detail::matmul_rows_bf16_dot, matmul_rows_avx512<load_f16>,
    detail::matmul_i8_avx512_vnni, detail::quantize_token_u8_avx512,
    sum_squares_avx512, scale_mul_avx512, axpy_avx512<load_f32>, swiglu_avx512, attend_group_avx512, attend_group_rows_avx512,
    attend_heads_avx512, f32_to_f16_row_avx512, detail::layernorm_scalar, gelu_tanh_avx512, true,
    detail::quantize_activations_avx512, detail::matmul_blocks_avx512_vnni,
};

}  // namespace pagedserve::kernels
