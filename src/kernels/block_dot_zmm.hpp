#pragma once
// The AVX-512 tables' K-quant dots on zmm (q4_k, q5_k, q6_k: Q4_K_M and Q5_K_M files): block_dot_simd.hpp's
// dot_k with two 32-weight vectors per instruction, which halves the instructions per super-block
// (decode is bound by them, not by the multipliers). Same integers, same per-token fp32 sequence for
// any number of tokens; the lanes differ from the 256-bit kernels, so the bits differ between tables.
// Included after block_dot_simd.hpp by the _avx512 files only.
#include <immintrin.h>

#include "block_dot_simd.hpp"

namespace pagedserve::kernels {
namespace {

#if defined(__AVX512VNNI__)
inline __m512i madd16_512(__m512i acc, __m512i a, __m512i b) { return _mm512_dpwssd_epi32(acc, a, b); }
#else
inline __m512i madd16_512(__m512i acc, __m512i a, __m512i b) { return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b)); }
#endif

inline __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

// One super-block as 4 zmm of 64 weight bytes (weights 64p .. 64p + 63), each with its s16 scales.
struct k_block512 {
  __m512i q[4];
  __m512i sc[4];
  __m256i offset_scales;  // as k_block
  __m256i mins16;
  float d, dmin;
};

template <class F, int n_t>
void dot_k512(float* sums, const void* row, const std::byte* y0, std::size_t y_stride, int nb) {
  const act_block256* y[n_t];
  for (int t = 0; t < n_t; ++t) y[t] = reinterpret_cast<const act_block256*>(y0 + t * y_stride);
  __m512 acc[n_t];
  __m256 acc_min[n_t];
  for (int t = 0; t < n_t; ++t) acc[t] = _mm512_setzero_ps(), acc_min[t] = _mm256_setzero_ps();
  for (int b = 0; b < nb; ++b) {
    k_block512 kb;
    F::decode(row, b, kb);
#pragma GCC unroll 8
    for (int t = 0; t < n_t; ++t) {
      const act_block256& a = y[t][b];
      const auto product = [&](int p) { return _mm512_maddubs_epi16(kb.q[p], _mm512_loadu_si512(a.qs + 64 * p)); };
      const __m512i c0 = madd16_512(_mm512_madd_epi16(product(0), kb.sc[0]), product(2), kb.sc[2]);
      const __m512i c1 = madd16_512(_mm512_madd_epi16(product(1), kb.sc[1]), product(3), kb.sc[3]);
      __m512i isum = _mm512_add_epi32(c0, c1);
      if constexpr (F::offset != 0)
        isum = _mm512_sub_epi32(isum, _mm512_zextsi256_si512(_mm256_madd_epi16(load32(a.bsums), kb.offset_scales)));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(kb.d * a.d), acc[t]);
      if constexpr (F::has_min)
        acc_min[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(load32(a.bsums), kb.mins16)),
                                     _mm256_set1_ps(kb.dmin * a.d), acc_min[t]);
    }
  }
  for (int t = 0; t < n_t; ++t) {
    const __m256 folded = _mm256_add_ps(_mm512_castps512_ps256(acc[t]),
                                        _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[t]), 1)));
    sums[t] = hsum(_mm256_sub_ps(folded, acc_min[t]));
  }
}

// q4_k / q5_k: zmm p holds sub-blocks 2p (the low nibbles of qs[32p ...]) and 2p + 1 (the high ones).
template <bool five_bits>
struct fmt512_q45_k {
  static constexpr int offset = 0;
  static constexpr bool has_min = true;
  [[gnu::always_inline]] static void decode(const void* row, int b, k_block512& kb) {
    const auto& b4 = static_cast<const block_q4_k*>(row)[b];
    const auto& b5 = static_cast<const block_q5_k*>(row)[b];
    const std::uint8_t* qs = five_bits ? b5.qs : b4.qs;
    std::uint64_t sc, mn;
    k4_scales_mins(five_bits ? b5.scales : b4.scales, &sc, &mn);
    kb.d = h(five_bits ? b5.d : b4.d);
    kb.dmin = h(five_bits ? b5.dmin : b4.dmin);
    const __m256i low4 = _mm256_set1_epi8(0xF);
    // Scale 2p on the low 256 bits, 2p + 1 on the high: s16 elements picked from 128-bit copies of all 8.
    const __m512i s16 = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(sc))));
    #pragma GCC unroll 8
    for (int p = 0; p < 4; ++p) {
      const __m256i raw = load32(qs + 32 * p);
      kb.q[p] = join(_mm256_and_si256(raw, low4), _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4));
      if constexpr (five_bits) {
        // q5_k: bit 2p (low half) or 2p + 1 (high half) of qh[l] adds 16 to byte l.
        const __m256i qh = load32(b5.qh);
        const __mmask64 set = _mm512_test_epi8_mask(
            join(qh, qh), join(_mm256_set1_epi8(static_cast<char>(1 << 2 * p)), _mm256_set1_epi8(static_cast<char>(1 << (2 * p + 1)))));
        kb.q[p] = _mm512_mask_add_epi8(kb.q[p], set, kb.q[p], _mm512_set1_epi8(16));
      }
      const short even = static_cast<short>((4 * p + 1) << 8 | 4 * p), odd = static_cast<short>((4 * p + 3) << 8 | (4 * p + 2));
      kb.sc[p] = _mm512_shuffle_epi8(s16, join(_mm256_set1_epi16(even), _mm256_set1_epi16(odd)));
    }
    const __m128i mn8 = _mm_cvtsi64_si128(static_cast<long long>(mn));
    kb.mins16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mn8, mn8));
  }
};

// q6_k: zmm p holds 64 consecutive weights; their 4 scales (one per 16) go one per 128-bit lane.
struct fmt512_q6_k {
  static constexpr int offset = 32;
  static constexpr bool has_min = false;
  [[gnu::always_inline]] static void decode(const void* row, int b, k_block512& kb) {
    const block_q6_k& x = static_cast<const block_q6_k*>(row)[b];
    const __m512i low4 = _mm512_set1_epi8(0xF), bits45 = _mm512_set1_epi8(0x30);
    #pragma GCC unroll 8
    for (int half = 0; half < 2; ++half) {
      const __m512i l = _mm512_loadu_si512(x.ql + 64 * half);  // weights 128 half + 0..63 (low), 64..127 (high)
      const __m256i hb256 = load32(x.qh + 32 * half);
      const __m512i hb = join(hb256, hb256);
      // Bits 2k, 2k+1 of qh to bits 4, 5: k = 0, 1 for the low nibbles, 2, 3 for the high.
      const __m512i h01 = _mm512_and_si512(_mm512_sllv_epi16(hb, join(_mm256_set1_epi16(4), _mm256_set1_epi16(2))), bits45);
      const __m512i h23 = _mm512_and_si512(_mm512_srlv_epi16(hb, join(_mm256_set1_epi16(0), _mm256_set1_epi16(2))), bits45);
      kb.q[2 * half] = _mm512_or_si512(_mm512_and_si512(l, low4), h01);
      kb.q[2 * half + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), low4), h23);
    }
    const __m256i scales16 = _mm256_cvtepi8_epi16(load16(x.scales));
    const __m512i all = _mm512_castsi256_si512(scales16);
    #pragma GCC unroll 8
    for (int p = 0; p < 4; ++p) {
      const __m128i lane = _mm_set1_epi16(static_cast<short>(4 * p));
      const __m512i index = _mm512_add_epi16(_mm512_broadcast_i32x4(lane),
                                             _mm512_setr_epi32(0, 0, 0, 0, 0x00010001, 0x00010001, 0x00010001, 0x00010001,
                                                               0x00020002, 0x00020002, 0x00020002, 0x00020002, 0x00030003,
                                                               0x00030003, 0x00030003, 0x00030003));
      kb.sc[p] = _mm512_permutexvar_epi16(index, all);
    }
    kb.offset_scales = _mm256_slli_epi16(scales16, 5);
    kb.d = h(x.d);
  }
};

template <class F, std::size_t... i>
constexpr block_dot_kernels k512_kernels(std::index_sequence<i...>) {
  return {sizeof...(i), {dot_k512<F, i + 1>...}};
}
template <class F>
constexpr block_dot_kernels k512_kernels() {
  return k512_kernels<F>(std::make_index_sequence<block_dot_tokens>());
}

// simd_kernels with the zmm K-quants.
inline const block_dot_kernels& zmm_kernels(dtype t) {
  static constexpr block_dot_kernels q4_k = k512_kernels<fmt512_q45_k<false>>(),
                                     q5_k = k512_kernels<fmt512_q45_k<true>>(), q6_k = k512_kernels<fmt512_q6_k>();
  switch (t) {
    case dtype::q4_k: return q4_k;
    case dtype::q5_k: return q5_k;
    case dtype::q6_k: return q6_k;
    default: return simd_kernels(t);
  }
}

}  // namespace
}  // namespace pagedserve::kernels
