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

// sums[t] = row x[nb] · token t's activations (y + t * y_stride bytes), t < n_t. Even and odd blocks
// go to two accumulators (two short fma chains instead of one long one), added at the end.
template <class F, int n_t>
void dot32(float* sums, const typename F::block* x, const std::byte* y0, std::size_t y_stride, int nb) {
  const act_block32* y[n_t];
  for (int t = 0; t < n_t; ++t) y[t] = reinterpret_cast<const act_block32*>(y0 + t * y_stride);
  __m256 acc[2][n_t];
  float acc_min[2][n_t];
  for (int t = 0; t < n_t; ++t) acc[0][t] = acc[1][t] = _mm256_setzero_ps(), acc_min[0][t] = acc_min[1][t] = 0.0f;
  const auto block = [&](int b, __m256* a, float* a_min) {
    const __m256i w = F::decode(x[b]);
    const float d = h(x[b].d);
    if constexpr (F::has_min) {
      const float m = h(x[b].m);
#pragma GCC unroll 4
      for (int t = 0; t < n_t; ++t) {
        const __m256i isum = dot4(_mm256_setzero_si256(), w, load32(y[t][b].qs));
        a[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d * y[t][b].d), a[t]);
        a_min[t] += m * y[t][b].s;
      }
    } else {
      const __m256i abs_w = _mm256_abs_epi8(w);
#pragma GCC unroll 4
      for (int t = 0; t < n_t; ++t) {
        const __m256i isum = dot_signed(abs_w, w, load32(y[t][b].qs));
        a[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d * y[t][b].d), a[t]);
      }
    }
  };
  int b = 0;
  for (; b + 1 < nb; b += 2) {
    block(b, acc[0], acc_min[0]);
    block(b + 1, acc[1], acc_min[1]);
  }
  if (b < nb) block(b, acc[0], acc_min[0]);
  for (int t = 0; t < n_t; ++t) sums[t] = hsum(_mm256_add_ps(acc[0][t], acc[1][t])) + (acc_min[0][t] + acc_min[1][t]);
}

// The shuffle that spreads s16 element 2k of a 128-bit lane over the low lane and 2k+1 over the high
// one: a 32-weight vector's two scales after vpmaddubsw, in formats with one scale per 16 weights.
inline __m256i pair_pick(int k) {
  const char a = static_cast<char>(4 * k), b = static_cast<char>(4 * k + 2);
  return _mm256_setr_epi8(a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, b, b + 1, b,
                          b + 1, b, b + 1, b, b + 1, b, b + 1, b, b + 1, b, b + 1, b, b + 1);
}

// sc[k] = the scales of vector k (weights 32k .. 32k + 31) from 16 s16 scales, one per 16 weights.
inline void pair_scales(__m256i scales16, __m256i* sc) {
  const __m256i halves[2] = {_mm256_broadcastsi128_si256(_mm256_castsi256_si128(scales16)),
                             _mm256_broadcastsi128_si256(_mm256_extracti128_si256(scales16, 1))};
  for (int k = 0; k < 8; ++k) sc[k] = _mm256_shuffle_epi8(halves[k / 4], pair_pick(k % 4));
}

// The K-quants and iq4_xs: per super-block, 8 vectors of 32 weight bytes q[k], their s16 scales sc[k],
// and per token  isum = sum_k vpmaddubsw(q[k], y_k) * sc[k] - offset * sum_i scales16[i] * bsums[i]
// (weights stored with an offset) and, with mins, imin = sum_i mins16[i] * bsums[i]; then
// acc += isum * (d * y.d), acc_min -= imin * (dmin * y.d). One fma chain each.
struct k_block {
  __m256i q[8];
  __m256i sc[8];
  __m256i offset_scales;  // offset * scale per 16 weights (s16), or unused
  __m256i mins16;         // min per 16 weights (s16), or unused
  float d, dmin;
};

// How each format fills a k_block: F::decode(row, b, kb); F::offset (weights stored + offset),
// F::has_min; F::signed_q (q holds signed weights: multiplied as |q| against sign(y, q)).
template <class F, int n_t>
void dot_k(float* sums, const void* row, const std::byte* y0, std::size_t y_stride, int nb) {
  const act_block256* y[n_t];
  for (int t = 0; t < n_t; ++t) y[t] = reinterpret_cast<const act_block256*>(y0 + t * y_stride);
  __m256 acc[n_t], acc_min[n_t];
  for (int t = 0; t < n_t; ++t) acc[t] = acc_min[t] = _mm256_setzero_ps();
  for (int b = 0; b < nb; ++b) {
    k_block kb;
    F::decode(row, b, kb);
    __m256i abs_q[8];
    if constexpr (F::signed_q)
      for (int k = 0; k < 8; ++k) abs_q[k] = _mm256_abs_epi8(kb.q[k]);
#pragma GCC unroll 4
    for (int t = 0; t < n_t; ++t) {
      const act_block256& a = y[t][b];
      const auto product = [&](int k) {  // s16 pairs of vector k's products
        const __m256i yk = load32(a.qs + 32 * k);
        if constexpr (F::signed_q) return _mm256_maddubs_epi16(abs_q[k], _mm256_sign_epi8(yk, kb.q[k]));
        return _mm256_maddubs_epi16(kb.q[k], yk);
      };
      // Four chains of two (short dependency chains for the accumulating vpdpwssd); exact, so the
      // grouping changes nothing.
      __m256i c[4];
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) c[k] = madd16(_mm256_madd_epi16(product(k), kb.sc[k]), product(k + 4), kb.sc[k + 4]);
      __m256i isum = _mm256_add_epi32(_mm256_add_epi32(c[0], c[1]), _mm256_add_epi32(c[2], c[3]));
      if constexpr (F::offset != 0)
        isum = _mm256_sub_epi32(isum, _mm256_madd_epi16(load32(a.bsums), kb.offset_scales));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(kb.d * a.d), acc[t]);
      if constexpr (F::has_min)
        acc_min[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(load32(a.bsums), kb.mins16)),
                                     _mm256_set1_ps(kb.dmin * a.d), acc_min[t]);
    }
  }
  for (int t = 0; t < n_t; ++t) sums[t] = hsum(_mm256_sub_ps(acc[t], acc_min[t]));
}

// 8 s16 scales (one per 32 weights) from the low 8 unsigned bytes of bytes: sc[k] = scale k in every lane.
inline void broadcast_scales8(__m128i bytes, __m256i* sc) {
  const __m256i s16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(bytes));
  for (int k = 0; k < 8; ++k) sc[k] = _mm256_shuffle_epi8(s16, _mm256_set1_epi16(static_cast<short>((2 * k + 1) << 8 | 2 * k)));
}

// q4_k and q5_k: 8 sub-blocks of 32 (4 or 5-bit) unsigned weights, a 6-bit scale and min each.
template <bool five_bits>
struct fmt_q45_k {
  static constexpr int offset = 0;
  static constexpr bool has_min = true, signed_q = false;
  static void decode(const void* row, int b, k_block& kb) {
    const auto& b4 = static_cast<const block_q4_k*>(row)[b];
    const auto& b5 = static_cast<const block_q5_k*>(row)[b];
    const std::uint8_t* qs = five_bits ? b5.qs : b4.qs;
    std::uint64_t sc, mn;
    k4_scales_mins(five_bits ? b5.scales : b4.scales, &sc, &mn);
    kb.d = h(five_bits ? b5.d : b4.d);
    kb.dmin = h(five_bits ? b5.dmin : b4.dmin);
    const __m256i low4 = _mm256_set1_epi8(0xF);
    for (int c = 0; c < 4; ++c) {
      const __m256i raw = load32(qs + 32 * c);
      kb.q[2 * c] = _mm256_and_si256(raw, low4);
      kb.q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
    }
    if constexpr (five_bits) {
      const __m256i qh = load32(b5.qh), one = _mm256_set1_epi8(1);
      for (int j = 0; j < 8; ++j)
        kb.q[j] = _mm256_or_si256(kb.q[j], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, j), one), 4));
    }
    broadcast_scales8(_mm_cvtsi64_si128(static_cast<long long>(sc)), kb.sc);
    // bsums are per 16 activations, mins per 32.
    const __m128i mn8 = _mm_cvtsi64_si128(static_cast<long long>(mn));
    kb.mins16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mn8, mn8));
  }
};

// q6_k: weights 0..63 stored with offset 32, a signed 8-bit scale per 16.
struct fmt_q6_k {
  static constexpr int offset = 32;
  static constexpr bool has_min = false, signed_q = false;
  static void decode(const void* row, int b, k_block& kb) {
    const block_q6_k& x = static_cast<const block_q6_k*>(row)[b];
    const __m256i low4 = _mm256_set1_epi8(0xF), bits45 = _mm256_set1_epi8(0x30);
    for (int half = 0; half < 2; ++half) {
      const __m256i l0 = load32(x.ql + 64 * half), l1 = load32(x.ql + 64 * half + 32), hb = load32(x.qh + 32 * half);
      // Bits 2k, 2k+1 of qh become bits 4, 5 of vector k's bytes.
      __m256i* q = kb.q + 4 * half;
      q[0] = _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), bits45));
      q[1] = _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), bits45));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_and_si256(hb, bits45));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                             _mm256_and_si256(_mm256_srli_epi16(hb, 2), bits45));
    }
    const __m256i scales16 = _mm256_cvtepi8_epi16(load16(x.scales));
    pair_scales(scales16, kb.sc);
    kb.offset_scales = _mm256_slli_epi16(scales16, 5);
    kb.d = h(x.d);
  }
};

// q3_k: 2 low bits in qs, the third in hmask (set: +0, clear: -4), stored here as 0..7 with offset 4;
// a 6-bit scale (minus 32) per 16.
struct fmt_q3_k {
  static constexpr int offset = 4;
  static constexpr bool has_min = false, signed_q = false;
  static void decode(const void* row, int b, k_block& kb) {
    const block_q3_k& x = static_cast<const block_q3_k*>(row)[b];
    const __m256i low2 = _mm256_set1_epi8(3), bit2 = _mm256_set1_epi8(4), hm = load32(x.hmask);
    for (int half = 0; half < 2; ++half) {
      const __m256i qs = load32(x.qs + 32 * half);
      for (int j = 0; j < 4; ++j) {
        const int shift = 4 * half + j;  // hmask bit of vector 4 half + j
        const __m256i high = _mm256_and_si256(
            shift >= 2 ? _mm256_srli_epi16(hm, shift - 2) : _mm256_slli_epi16(hm, 2 - shift), bit2);
        kb.q[4 * half + j] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), low2), high);
      }
    }
    std::int8_t scales[16];
    k3_scales(x.scales, scales);
    const __m256i scales16 = _mm256_cvtepi8_epi16(load16(scales));
    pair_scales(scales16, kb.sc);
    kb.offset_scales = _mm256_slli_epi16(scales16, 2);
    kb.d = h(x.d);
  }
};

// q2_k: 2-bit weights, a 4-bit scale and 4-bit min per 16.
struct fmt_q2_k {
  static constexpr int offset = 0;
  static constexpr bool has_min = true, signed_q = false;
  static void decode(const void* row, int b, k_block& kb) {
    const block_q2_k& x = static_cast<const block_q2_k*>(row)[b];
    const __m256i low2 = _mm256_set1_epi8(3);
    for (int half = 0; half < 2; ++half) {
      const __m256i qs = load32(x.qs + 32 * half);
      for (int j = 0; j < 4; ++j) kb.q[4 * half + j] = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), low2);
    }
    const __m128i packed = load16(x.scales);
    pair_scales(_mm256_cvtepu8_epi16(_mm_and_si128(packed, _mm_set1_epi8(0xF))), kb.sc);
    kb.mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0xF)));
    kb.d = h(x.d);
    kb.dmin = h(x.dmin);
  }
};

// iq4_xs: 8 sub-blocks of 32 table-decoded signed weights, a 6-bit scale (minus 32) each.
struct fmt_iq4_xs {
  static constexpr int offset = 0;
  static constexpr bool has_min = false, signed_q = true;
  static void decode(const void* row, int b, k_block& kb) {
    const block_iq4_xs& x = static_cast<const block_iq4_xs*>(row)[b];
    for (int j = 0; j < 8; ++j) {
      kb.q[j] = iq4_lookup(nibbles32(x.qs + 16 * j));
      kb.sc[j] = _mm256_set1_epi16(static_cast<short>(iq4_xs_scale(x, j)));
    }
    kb.d = h(x.d);
  }
};

// Up to this many tokens share one decode of each weight block.
constexpr int block_dot_tokens = 4;

using block_dot_fn = void (*)(float* sums, const void* row, const std::byte* y0, std::size_t y_stride, int nb);

template <class F, int n_t>
void dot32_of(float* sums, const void* row, const std::byte* y0, std::size_t y_stride, int nb) {
  dot32<F, n_t>(sums, static_cast<const typename F::block*>(row), y0, y_stride, nb);
}

// by_tokens[n_t - 1]: one format's kernel for n_t tokens.
struct block_dot_kernels {
  block_dot_fn by_tokens[block_dot_tokens];
};

template <class F>
constexpr block_dot_kernels legacy_kernels() {
  return {{dot32_of<F, 1>, dot32_of<F, 2>, dot32_of<F, 3>, dot32_of<F, 4>}};
}
template <class F>
constexpr block_dot_kernels k_kernels() {
  return {{dot_k<F, 1>, dot_k<F, 2>, dot_k<F, 3>, dot_k<F, 4>}};
}

inline const block_dot_kernels& simd_kernels(dtype t) {
  static constexpr block_dot_kernels q4_0 = legacy_kernels<fmt_q4_0>(), q4_1 = legacy_kernels<fmt_q4_1>(),
                                     q5_0 = legacy_kernels<fmt_q5_0>(), q5_1 = legacy_kernels<fmt_q5_1>(),
                                     q8_0 = legacy_kernels<fmt_q8_0>(), iq4_nl = legacy_kernels<fmt_iq4_nl>(),
                                     q2_k = k_kernels<fmt_q2_k>(), q3_k = k_kernels<fmt_q3_k>(),
                                     q4_k = k_kernels<fmt_q45_k<false>>(), q5_k = k_kernels<fmt_q45_k<true>>(),
                                     q6_k = k_kernels<fmt_q6_k>(), iq4_xs = k_kernels<fmt_iq4_xs>();
  switch (t) {
    case dtype::q4_0: return q4_0;
    case dtype::q4_1: return q4_1;
    case dtype::q5_0: return q5_0;
    case dtype::q5_1: return q5_1;
    case dtype::q8_0: return q8_0;
    case dtype::iq4_nl: return iq4_nl;
    case dtype::q2_k: return q2_k;
    case dtype::q3_k: return q3_k;
    case dtype::q4_k: return q4_k;
    case dtype::q5_k: return q5_k;
    case dtype::q6_k: return q6_k;
    default: return iq4_xs;
  }
}

// kernel_table::matmul_blocks: row by row (a decode step streams each row once), tokens in groups of 4.
inline void matmul_blocks_simd(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end) {
  const block_dot_kernels& k = simd_kernels(w.type);
  const std::size_t row_bytes = block_row_bytes(w.type, w.cols), x_bytes = activation_row_bytes(w.type, w.cols);
  const int nb = w.cols / block_layout_of(w.type).elements;
  for (int o = o_begin; o < o_end; ++o) {
    const void* row = static_cast<const std::byte*>(w.data) + static_cast<std::size_t>(o) * row_bytes;
    for (int t = 0; t < n_tokens; t += block_dot_tokens) {
      const int n_t = std::min(block_dot_tokens, n_tokens - t);
      float sums[block_dot_tokens];
      k.by_tokens[n_t - 1](sums, row, xq + t * x_bytes, x_bytes, nb);
      for (int i = 0; i < n_t; ++i) out[static_cast<std::size_t>(t + i) * w.rows + o] = sums[i];
    }
  }
}

}  // namespace
}  // namespace pagedserve::kernels
