#pragma once
// The SIMD dots of the 256-weight formats (q2_k ... q6_k, iq4_xs) with q8_K activations: each
// super-block decoded once into 8 vectors of 32 weight bytes and their scales (k_block), multiplied
// with a group of tokens while they sit in registers.
#include "block_simd_ops.hpp"

namespace pagedserve::kernels {
namespace {

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
  #pragma GCC unroll 8
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
      #pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) abs_q[k] = _mm256_abs_epi8(kb.q[k]);
#pragma GCC unroll 8
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

// 8 s16 scales (one per 32 weights): sc[k] = scale k in every lane.
inline void broadcast_scales8(__m128i scales16, __m256i* sc) {
  const __m256i s16 = _mm256_broadcastsi128_si256(scales16);
  #pragma GCC unroll 8
  for (int k = 0; k < 8; ++k) sc[k] = _mm256_shuffle_epi8(s16, _mm256_set1_epi16(static_cast<short>((2 * k + 1) << 8 | 2 * k)));
}

// q4_k and q5_k: 8 sub-blocks of 32 (4 or 5-bit) unsigned weights, a 6-bit scale and min each.
template <bool five_bits>
struct fmt_q45_k {
  static constexpr int offset = 0;
  static constexpr bool has_min = true, signed_q = false;
  [[gnu::always_inline]] static void decode(const void* row, int b, k_block& kb) {
    const auto& b4 = static_cast<const block_q4_k*>(row)[b];
    const auto& b5 = static_cast<const block_q5_k*>(row)[b];
    const std::uint8_t* qs = five_bits ? b5.qs : b4.qs;
    std::uint64_t sc, mn;
    k4_scales_mins(five_bits ? b5.scales : b4.scales, &sc, &mn);
    kb.d = h(five_bits ? b5.d : b4.d);
    kb.dmin = h(five_bits ? b5.dmin : b4.dmin);
    const __m256i low4 = _mm256_set1_epi8(0xF);
    #pragma GCC unroll 8
    for (int c = 0; c < 4; ++c) {
      const __m256i raw = load32(qs + 32 * c);
      kb.q[2 * c] = _mm256_and_si256(raw, low4);
      kb.q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
    }
    if constexpr (five_bits) {
      const __m256i qh = load32(b5.qh), one = _mm256_set1_epi8(1);
      #pragma GCC unroll 8
      for (int j = 0; j < 8; ++j)
        kb.q[j] = _mm256_or_si256(kb.q[j], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, j), one), 4));
    }
    broadcast_scales8(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(sc))), kb.sc);
    // bsums are per 16 activations, mins per 32.
    const __m128i mn8 = _mm_cvtsi64_si128(static_cast<long long>(mn));
    kb.mins16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mn8, mn8));
  }
};

// q6_k: weights 0..63 stored with offset 32, a signed 8-bit scale per 16.
struct fmt_q6_k {
  static constexpr int offset = 32;
  static constexpr bool has_min = false, signed_q = false;
  [[gnu::always_inline]] static void decode(const void* row, int b, k_block& kb) {
    const block_q6_k& x = static_cast<const block_q6_k*>(row)[b];
    const __m256i low4 = _mm256_set1_epi8(0xF), bits45 = _mm256_set1_epi8(0x30);
    #pragma GCC unroll 8
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

// q3_k's 16 scales (k3_scales) as signed bytes, unpacked in registers: low nibbles from bytes 0-7 (low
// nibble for scales 0-7, high for 8-15), bits 4-5 from byte 8 + j % 4 at bit 2 (j / 4).
inline __m128i k3_scales_vec(const std::uint8_t* packed) {
  std::uint64_t lows;
  std::uint32_t highs;
  std::memcpy(&lows, packed, 8);
  std::memcpy(&highs, packed + 8, 4);
  const __m128i p = _mm_cvtsi64_si128(static_cast<long long>(lows)), nib = _mm_set1_epi8(0xF);
  const __m128i low = _mm_unpacklo_epi64(_mm_and_si128(p, nib), _mm_and_si128(_mm_srli_epi16(p, 4), nib));
  const __m128i high = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(static_cast<int>(highs)), _mm_setr_epi32(0, 2, 4, 6)),
                                     _mm_set1_epi8(3));
  return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi8(32));
}

// q3_k: 2 low bits in qs, the third in hmask (set: +0, clear: -4), stored here as 0..7 with offset 4;
// a 6-bit scale (minus 32) per 16.
struct fmt_q3_k {
  static constexpr int offset = 4;
  static constexpr bool has_min = false, signed_q = false;
  [[gnu::always_inline]] static void decode(const void* row, int b, k_block& kb) {
    const block_q3_k& x = static_cast<const block_q3_k*>(row)[b];
    const __m256i low2 = _mm256_set1_epi8(3), bit2 = _mm256_set1_epi8(4), hm = load32(x.hmask);
    #pragma GCC unroll 8
    for (int half = 0; half < 2; ++half) {
      const __m256i qs = load32(x.qs + 32 * half);
      #pragma GCC unroll 8
      for (int j = 0; j < 4; ++j) {
        const int shift = 4 * half + j;  // hmask bit of vector 4 half + j
        const __m256i high = _mm256_and_si256(
            shift >= 2 ? _mm256_srli_epi16(hm, shift - 2) : _mm256_slli_epi16(hm, 2 - shift), bit2);
        kb.q[4 * half + j] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), low2), high);
      }
    }
    const __m256i scales16 = _mm256_cvtepi8_epi16(k3_scales_vec(x.scales));
    pair_scales(scales16, kb.sc);
    kb.offset_scales = _mm256_slli_epi16(scales16, 2);
    kb.d = h(x.d);
  }
};

// q2_k: 2-bit weights, a 4-bit scale and 4-bit min per 16.
struct fmt_q2_k {
  static constexpr int offset = 0;
  static constexpr bool has_min = true, signed_q = false;
  [[gnu::always_inline]] static void decode(const void* row, int b, k_block& kb) {
    const block_q2_k& x = static_cast<const block_q2_k*>(row)[b];
    const __m256i low2 = _mm256_set1_epi8(3);
    #pragma GCC unroll 8
    for (int half = 0; half < 2; ++half) {
      const __m256i qs = load32(x.qs + 32 * half);
      #pragma GCC unroll 8
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
  [[gnu::always_inline]] static void decode(const void* row, int b, k_block& kb) {
    const block_iq4_xs& x = static_cast<const block_iq4_xs*>(row)[b];
    #pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) kb.q[j] = iq4_lookup(nibbles32(x.qs + 16 * j));
    // Scale j: nibble j of scales_l (low nibble first) below bits 2j, 2j+1 of scales_h, minus 32.
    std::uint32_t low;
    std::memcpy(&low, x.scales_l, 4);
    const __m128i l = _mm_cvtsi32_si128(static_cast<int>(low)), nib = _mm_set1_epi8(0xF);
    std::uint64_t high = 0;
    #pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) high |= static_cast<std::uint64_t>((x.scales_h >> 2 * j) & 3) << (8 * j + 4);
    const __m128i ls = _mm_or_si128(_mm_unpacklo_epi8(_mm_and_si128(l, nib), _mm_and_si128(_mm_srli_epi16(l, 4), nib)),
                                    _mm_cvtsi64_si128(static_cast<long long>(high)));
    broadcast_scales8(_mm_sub_epi16(_mm_cvtepu8_epi16(ls), _mm_set1_epi16(32)), kb.sc);
    kb.d = h(x.d);
  }
};

}  // namespace
}  // namespace pagedserve::kernels
