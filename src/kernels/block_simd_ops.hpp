#pragma once
// The 256-bit primitives of the SIMD block-quantized dots (block_dot_legacy.hpp, block_dot_k.hpp),
// picked by the including file's flags:
//   dot4(acc, u8, s8)     acc + the sums of 4 u8 x s8 products (vpdpbusd with VNNI, else vpmaddubsw
//                         + vpmaddwd)
//   madd16(acc, s16, s16) acc + the sums of 2 s16 products (vpdpwssd with VNNI, else vpmaddwd + add)
// and the unpacking helpers the formats share. Signed weights go in as |w| against sign(y, w) (exact:
// |w| <= 128, |y| <= 127). Internal linkage on purpose: each table's file compiles them with its flags.
#pragma GCC target("f16c")
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "block_formats.hpp"
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

}  // namespace
}  // namespace pagedserve::kernels
