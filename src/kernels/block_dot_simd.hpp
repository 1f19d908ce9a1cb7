#pragma once
// The SIMD block-quantized matmul every x86 table shares, on 256-bit vectors: each format's weight
// block is decoded once into bytes (32 weights a vector) and multiplied with up to 4 tokens' int8
// activations while it sits in registers. The integer products go through one of two primitives,
// picked by the including file's flags:
//   dot4(acc, u8, s8)     acc + the sums of 4 u8 x s8 products (vpdpbusd with VNNI, else vpmaddubsw
//                         + vpmaddwd)
//   madd16(acc, s16, s16) acc + the sums of 2 s16 products (vpdpwssd with VNNI, else vpmaddwd + add)
// Weights that are signed go in as |w| against sign(y, w) (exact: |w| <= 128, |y| <= 127). Integer
// sums are exact, so only the fp32 accumulation has an order: per token, one 8-lane accumulator takes
// one multiply-add per block in block order, then a fixed tree sums its lanes. That sequence is the
// same whichever of the 1-4 token kernels runs it, so results do not depend on the batch.
// Internal linkage on purpose: each table's file compiles it with its own ISA flags.
#pragma GCC target("f16c")
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "block_activations.hpp"
#include "block_formats.hpp"
#include "block_kernels.hpp"
#include "pagedserve/ggml_blocks.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
inline __m256i dot4(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(acc, u, s); }
inline __m256i madd16(__m256i acc, __m256i a, __m256i b) { return _mm256_dpwssd_epi32(acc, a, b); }
#elif defined(__AVXVNNI__)
inline __m256i dot4(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }
inline __m256i madd16(__m256i acc, __m256i a, __m256i b) { return _mm256_dpwssd_avx_epi32(acc, a, b); }
#else
inline __m256i dot4(__m256i acc, __m256i u, __m256i s) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}
inline __m256i madd16(__m256i acc, __m256i a, __m256i b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
#endif

inline float h(std::uint16_t v) { return _cvtsh_ss(v); }
inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i load16(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// The 8 lanes summed in a fixed tree.
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 16 bytes of nibbles as 32 bytes: low nibbles first (weights 0..15), then high (16..31).
inline __m256i nibbles32(const std::uint8_t* qs) {
  const __m128i raw = load16(qs), m = _mm_set1_epi8(0xF);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), m), _mm_and_si128(raw, m));
}

// q5_0/q5_1: bit i of qh as 0x10 in byte i.
inline __m256i fifth_bits(const std::uint8_t* qh) {
  std::uint32_t bits;
  std::memcpy(&bits, qh, 4);
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                                             _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
                                                              2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

inline __m256i iq4_lookup(__m256i nibbles) {
  const __m128i levels = _mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_levels));
  return _mm256_shuffle_epi8(_mm256_set_m128i(levels, levels), nibbles);
}

// Signed weights w and token activations y: the 8 lanes of sum w * y.
inline __m256i dot_signed(__m256i abs_w, __m256i w, __m256i y) {
  return dot4(_mm256_setzero_si256(), abs_w, _mm256_sign_epi8(y, w));
}

// The legacy 32-weight formats. decode(block, &w) gives the block's weight bytes (signed, or unsigned
// with a min); the kernels differ only there.
struct fmt_q4_0 {
  using block = block_q4_0;
  static constexpr bool has_min = false;
  static __m256i decode(const block& b) { return _mm256_sub_epi8(nibbles32(b.qs), _mm256_set1_epi8(8)); }
};
struct fmt_q8_0 {
  using block = block_q8_0;
  static constexpr bool has_min = false;
  static __m256i decode(const block& b) { return load32(b.qs); }
};
struct fmt_iq4_nl {
  using block = block_iq4_nl;
  static constexpr bool has_min = false;
  static __m256i decode(const block& b) { return iq4_lookup(nibbles32(b.qs)); }
};
struct fmt_q5_0 {
  using block = block_q5_0;
  static constexpr bool has_min = false;
  static __m256i decode(const block& b) {
    return _mm256_sub_epi8(_mm256_or_si256(nibbles32(b.qs), fifth_bits(b.qh)), _mm256_set1_epi8(16));
  }
};
struct fmt_q4_1 {
  using block = block_q4_1;
  static constexpr bool has_min = true;
  static __m256i decode(const block& b) { return nibbles32(b.qs); }
};
struct fmt_q5_1 {
  using block = block_q5_1;
  static constexpr bool has_min = true;
  static __m256i decode(const block& b) { return _mm256_or_si256(nibbles32(b.qs), fifth_bits(b.qh)); }
};

// sums[t] = row x[nb] · token t's activations (y + t * y_stride bytes), t < n_t.
template <class F, int n_t>
void dot32(float* sums, const typename F::block* x, const std::byte* y0, std::size_t y_stride, int nb) {
  const act_block32* y[n_t];
  for (int t = 0; t < n_t; ++t) y[t] = reinterpret_cast<const act_block32*>(y0 + t * y_stride);
  __m256 acc[n_t];
  float acc_min[n_t];
  for (int t = 0; t < n_t; ++t) acc[t] = _mm256_setzero_ps(), acc_min[t] = 0.0f;
  for (int b = 0; b < nb; ++b) {
    const __m256i w = F::decode(x[b]);
    const float d = h(x[b].d);
    if constexpr (F::has_min) {
      const float m = h(x[b].m);
#pragma GCC unroll 4
      for (int t = 0; t < n_t; ++t) {
        const __m256i isum = dot4(_mm256_setzero_si256(), w, load32(y[t][b].qs));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d * y[t][b].d), acc[t]);
        acc_min[t] += m * y[t][b].s;
      }
    } else {
      const __m256i abs_w = _mm256_abs_epi8(w);
#pragma GCC unroll 4
      for (int t = 0; t < n_t; ++t) {
        const __m256i isum = dot_signed(abs_w, w, load32(y[t][b].qs));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d * y[t][b].d), acc[t]);
      }
    }
  }
  for (int t = 0; t < n_t; ++t) sums[t] = hsum(acc[t]) + acc_min[t];
}

// s16 lanes 0-7 = a, 8-15 = b: one scale per 16 weights of a 32-weight vector after vpmaddubsw.
inline __m256i scale_pair(int a, int b) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(b)), _mm_set1_epi16(static_cast<short>(a)));
}

// q4_k and q5_k: 8 sub-blocks of 32 unsigned weights, each with a 6-bit scale and min.
template <bool five_bits, int n_t>
void dot_q45_k(float* sums, const void* row, const std::byte* y0, std::size_t y_stride, int nb) {
  const act_block256* y[n_t];
  for (int t = 0; t < n_t; ++t) y[t] = reinterpret_cast<const act_block256*>(y0 + t * y_stride);
  __m256 acc[n_t];
  for (int t = 0; t < n_t; ++t) acc[t] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0xF);
  for (int b = 0; b < nb; ++b) {
    const auto& b4 = static_cast<const block_q4_k*>(row)[b];
    const auto& b5 = static_cast<const block_q5_k*>(row)[b];
    const std::uint8_t* scales = five_bits ? b5.scales : b4.scales;
    const std::uint8_t* qs = five_bits ? b5.qs : b4.qs;
    const float d = h(five_bits ? b5.d : b4.d), dmin = h(five_bits ? b5.dmin : b4.dmin);
    int sc[8], mn[8];
    for (int j = 0; j < 8; ++j) k4_scale_min(scales, j, &sc[j], &mn[j]);
    __m256i q[8];
    for (int c = 0; c < 4; ++c) {
      const __m256i raw = load32(qs + 32 * c);
      q[2 * c] = _mm256_and_si256(raw, low4);
      q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
    }
    if constexpr (five_bits) {
      const __m256i qh = load32(b5.qh), one = _mm256_set1_epi8(1);
      for (int j = 0; j < 8; ++j)
        q[j] = _mm256_or_si256(q[j], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, j), one), 4));
    }
    // bsums are per 16 activations, mins per 32.
    const __m256i mins16 = _mm256_setr_epi16(mn[0], mn[0], mn[1], mn[1], mn[2], mn[2], mn[3], mn[3], mn[4], mn[4],
                                             mn[5], mn[5], mn[6], mn[6], mn[7], mn[7]);
#pragma GCC unroll 4
    for (int t = 0; t < n_t; ++t) {
      const act_block256& a = y[t][b];
      __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j)
        isum = madd16(isum, _mm256_maddubs_epi16(q[j], load32(a.qs + 32 * j)), _mm256_set1_epi16(static_cast<short>(sc[j])));
      const __m256i imin = _mm256_madd_epi16(load32(a.bsums), mins16);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(a.d * d), acc[t]);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(imin), _mm256_set1_ps(-(a.d * dmin)), acc[t]);
    }
  }
  for (int t = 0; t < n_t; ++t) sums[t] = hsum(acc[t]);
}

// q6_k: 8 vectors of 32 weights in 0..63 (minus 32 through the bsums), a signed scale per 16.
template <int n_t>
void dot_q6_k(float* sums, const void* row, const std::byte* y0, std::size_t y_stride, int nb) {
  const act_block256* y[n_t];
  for (int t = 0; t < n_t; ++t) y[t] = reinterpret_cast<const act_block256*>(y0 + t * y_stride);
  __m256 acc[n_t];
  for (int t = 0; t < n_t; ++t) acc[t] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0xF), low2 = _mm256_set1_epi8(3);
  for (int b = 0; b < nb; ++b) {
    const block_q6_k& x = static_cast<const block_q6_k*>(row)[b];
    __m256i q[8];
    for (int half = 0; half < 2; ++half) {
      const __m256i l0 = load32(x.ql + 64 * half), l1 = load32(x.ql + 64 * half + 32), hb = load32(x.qh + 32 * half);
      const auto high = [&](int shift) {
        return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, shift), low2), 4);
      };
      q[4 * half + 0] = _mm256_or_si256(_mm256_and_si256(l0, low4), high(0));
      q[4 * half + 1] = _mm256_or_si256(_mm256_and_si256(l1, low4), high(2));
      q[4 * half + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), high(4));
      q[4 * half + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4), high(6));
    }
    const __m256i scales16 = _mm256_cvtepi8_epi16(load16(x.scales));
    __m256i sc[8];
    for (int k = 0; k < 8; ++k) sc[k] = scale_pair(x.scales[2 * k], x.scales[2 * k + 1]);
    const float d = h(x.d);
#pragma GCC unroll 4
    for (int t = 0; t < n_t; ++t) {
      const act_block256& a = y[t][b];
      __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) isum = madd16(isum, _mm256_maddubs_epi16(q[k], load32(a.qs + 32 * k)), sc[k]);
      isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(_mm256_madd_epi16(load32(a.bsums), scales16), 5));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d * a.d), acc[t]);
    }
  }
  for (int t = 0; t < n_t; ++t) sums[t] = hsum(acc[t]);
}

// iq4_xs: 8 sub-blocks of 32 table-decoded signed weights, a 6-bit scale each.
template <int n_t>
void dot_iq4_xs(float* sums, const void* row, const std::byte* y0, std::size_t y_stride, int nb) {
  const act_block256* y[n_t];
  for (int t = 0; t < n_t; ++t) y[t] = reinterpret_cast<const act_block256*>(y0 + t * y_stride);
  __m256 acc[n_t];
  for (int t = 0; t < n_t; ++t) acc[t] = _mm256_setzero_ps();
  for (int b = 0; b < nb; ++b) {
    const block_iq4_xs& x = static_cast<const block_iq4_xs*>(row)[b];
    __m256i w[8], abs_w[8];
    for (int j = 0; j < 8; ++j) {
      w[j] = iq4_lookup(nibbles32(x.qs + 16 * j));
      abs_w[j] = _mm256_abs_epi8(w[j]);
    }
    const float d = h(x.d);
#pragma GCC unroll 4
    for (int t = 0; t < n_t; ++t) {
      const act_block256& a = y[t][b];
      __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j)
        isum = madd16(isum, _mm256_maddubs_epi16(abs_w[j], _mm256_sign_epi8(load32(a.qs + 32 * j), w[j])),
                      _mm256_set1_epi16(static_cast<short>(iq4_xs_scale(x, j))));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d * a.d), acc[t]);
    }
  }
  for (int t = 0; t < n_t; ++t) sums[t] = hsum(acc[t]);
}

// Up to this many tokens share one decode of each weight block.
constexpr int block_dot_tokens = 4;

using block_dot_fn = void (*)(float* sums, const void* row, const std::byte* y0, std::size_t y_stride, int nb);

template <class F, int n_t>
void dot32_of(float* sums, const void* row, const std::byte* y0, std::size_t y_stride, int nb) {
  dot32<F, n_t>(sums, static_cast<const typename F::block*>(row), y0, y_stride, nb);
}

// kernels[n_t - 1] of one format, or nullptr where only the scalar dot exists.
struct block_dot_kernels {
  block_dot_fn by_tokens[block_dot_tokens];
};

template <template <int> class K>
constexpr block_dot_kernels kernels_of() {
  return {{K<1>::run, K<2>::run, K<3>::run, K<4>::run}};
}
template <class F>
struct k32 {
  template <int n_t>
  struct of {
    static void run(float* s, const void* r, const std::byte* y, std::size_t ys, int nb) { dot32_of<F, n_t>(s, r, y, ys, nb); }
  };
};
template <int n_t>
struct k_q4_k {
  static void run(float* s, const void* r, const std::byte* y, std::size_t ys, int nb) { dot_q45_k<false, n_t>(s, r, y, ys, nb); }
};
template <int n_t>
struct k_q5_k {
  static void run(float* s, const void* r, const std::byte* y, std::size_t ys, int nb) { dot_q45_k<true, n_t>(s, r, y, ys, nb); }
};
template <int n_t>
struct k_q6_k {
  static void run(float* s, const void* r, const std::byte* y, std::size_t ys, int nb) { dot_q6_k<n_t>(s, r, y, ys, nb); }
};
template <int n_t>
struct k_iq4_xs {
  static void run(float* s, const void* r, const std::byte* y, std::size_t ys, int nb) { dot_iq4_xs<n_t>(s, r, y, ys, nb); }
};

inline const block_dot_kernels* simd_kernels(dtype t) {
  static constexpr block_dot_kernels q4_0 = kernels_of<k32<fmt_q4_0>::of>(), q4_1 = kernels_of<k32<fmt_q4_1>::of>(),
                                     q5_0 = kernels_of<k32<fmt_q5_0>::of>(), q5_1 = kernels_of<k32<fmt_q5_1>::of>(),
                                     q8_0 = kernels_of<k32<fmt_q8_0>::of>(), iq4_nl = kernels_of<k32<fmt_iq4_nl>::of>(),
                                     q4_k = kernels_of<k_q4_k>(), q5_k = kernels_of<k_q5_k>(), q6_k = kernels_of<k_q6_k>(),
                                     iq4_xs = kernels_of<k_iq4_xs>();
  switch (t) {
    case dtype::q4_0: return &q4_0;
    case dtype::q4_1: return &q4_1;
    case dtype::q5_0: return &q5_0;
    case dtype::q5_1: return &q5_1;
    case dtype::q8_0: return &q8_0;
    case dtype::iq4_nl: return &iq4_nl;
    case dtype::q4_k: return &q4_k;
    case dtype::q5_k: return &q5_k;
    case dtype::q6_k: return &q6_k;
    case dtype::iq4_xs: return &iq4_xs;
    default: return nullptr;  // q2_k, q3_k: the scalar dot
  }
}

// kernel_table::matmul_blocks: row by row (a decode step streams each row once), tokens in groups of 4.
inline void matmul_blocks_simd(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end) {
  const block_dot_kernels* k = simd_kernels(w.type);
  if (k == nullptr) {
    detail::matmul_blocks_scalar(out, xq, w, n_tokens, o_begin, o_end);
    return;
  }
  const std::size_t row_bytes = block_row_bytes(w.type, w.cols), x_bytes = activation_row_bytes(w.type, w.cols);
  const int nb = w.cols / block_layout_of(w.type).elements;
  for (int o = o_begin; o < o_end; ++o) {
    const void* row = static_cast<const std::byte*>(w.data) + static_cast<std::size_t>(o) * row_bytes;
    for (int t = 0; t < n_tokens; t += block_dot_tokens) {
      const int n_t = std::min(block_dot_tokens, n_tokens - t);
      float sums[block_dot_tokens];
      k->by_tokens[n_t - 1](sums, row, xq + t * x_bytes, x_bytes, nb);
      for (int i = 0; i < n_t; ++i) out[static_cast<std::size_t>(t + i) * w.rows + o] = sums[i];
    }
  }
}

}  // namespace
}  // namespace pagedserve::kernels
