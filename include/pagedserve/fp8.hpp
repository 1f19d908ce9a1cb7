#pragma once
// The two 8-bit floats of the OCP FP8 spec, as vLLM's fp8 KV cache stores them (docs/kv-cache-dtypes.md):
//   e4m3 (vLLM's "fp8"): sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinities, S.1111.111 is
//        NaN, largest finite 448, smallest subnormal 2^-9.
//   e5m2: sign, 5 exponent bits (bias 15), 2 mantissa bits: the high byte of an IEEE half; largest finite
//        57344, smallest subnormal 2^-16.
// Encoding rounds to nearest even and saturates: a finite (or infinite) input beyond the largest finite
// value stores that value, as vLLM's saturating conversion with scale 1.0 does; NaN stays NaN.
#include <bit>
#include <cmath>
#include <cstdint>

namespace pagedserve {

// One element of each fp8 KV cache type: distinct types, so kernels overload their widening on them.
struct fp8_e4m3 {
  std::uint8_t bits;
};
struct fp8_e5m2 {
  std::uint8_t bits;
};

namespace detail {

// float -> an 8-bit float of n_mant mantissa bits and exponent bias `bias`; max_code: the largest finite
// magnitude's code, nan_code: the magnitude code NaN gets.
template <int n_mant, int bias, std::uint8_t max_code, std::uint8_t nan_code>
std::uint8_t f32_to_fp8(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const auto sign = static_cast<std::uint8_t>((u >> 24) & 0x80u);
  const std::uint32_t mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) return sign | nan_code;
  // The largest finite magnitude: exponent and mantissa fields of max_code, rebiased to fp32.
  constexpr std::uint32_t max_f32 = ((max_code >> n_mant) + 127u - bias) << 23 | (max_code & ((1u << n_mant) - 1)) << (23 - n_mant);
  if (mag >= max_f32) return sign | max_code;  // saturate (infinity too)
  constexpr std::uint32_t min_normal_f32 = (128u - bias) << 23;  // 2^(1 - bias)
  if (mag < min_normal_f32) {
    // Zero or subnormal: a multiple of 2^(1 - bias - n_mant), counted by the code itself (a count of
    // 2^n_mant is the smallest normal's code). Scaling by a power of two is exact; nearbyint rounds to
    // even in the default rounding mode.
    const float units = std::bit_cast<float>(mag) * std::bit_cast<float>(static_cast<std::uint32_t>(127 + bias - 1 + n_mant) << 23);
    return sign | static_cast<std::uint8_t>(std::nearbyint(units));
  }
  // Normal: round the 23-bit mantissa to n_mant bits, to nearest even (a carry bumps the exponent,
  // never past max_code since mag < max_f32), then rebias the exponent.
  constexpr int drop = 23 - n_mant;
  const std::uint32_t rounded = (mag + ((1u << (drop - 1)) - 1) + ((mag >> drop) & 1u)) >> drop;
  return sign | static_cast<std::uint8_t>(rounded - ((127u - bias) << n_mant));
}

}  // namespace detail

inline std::uint8_t f32_to_fp8_e4m3(float x) { return detail::f32_to_fp8<3, 7, 0x7e, 0x7f>(x); }
inline std::uint8_t f32_to_fp8_e5m2(float x) { return detail::f32_to_fp8<2, 15, 0x7b, 0x7e>(x); }

// Exact widening (subnormals and NaN included).
inline float fp8_e4m3_to_f32(std::uint8_t c) {
  const std::uint32_t sign = static_cast<std::uint32_t>(c & 0x80u) << 24;
  const std::uint32_t exp = (c >> 3) & 0xfu, mant = c & 0x7u;
  if (exp == 0xf && mant == 0x7) return std::bit_cast<float>(sign | 0x7fc00000u);
  if (exp == 0) return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(static_cast<float>(mant) * 0x1p-9f));
  return std::bit_cast<float>(sign | (exp + 120u) << 23 | mant << 20);
}
inline float fp8_e5m2_to_f32(std::uint8_t c) {
  const std::uint32_t sign = static_cast<std::uint32_t>(c & 0x80u) << 24;
  const std::uint32_t exp = (c >> 2) & 0x1fu, mant = c & 0x3u;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant ? 0x400000u : 0u));
  if (exp == 0) return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(static_cast<float>(mant) * 0x1p-16f));
  return std::bit_cast<float>(sign | (exp + 112u) << 23 | mant << 21);
}

}  // namespace pagedserve
