#pragma once
// The per-format decoders and encoders behind dequantize_blocks / quantize_blocks (ggml_blocks.cpp
// dispatches on the dtype). Each decoder repeats ggml's dequantize_row_<type> arithmetic product
// for product, so its floats are ggml's to the bit; each encoder writes valid blocks whose decoding
// approximates its input (a least-squares search per block, as ggml's reference quantizers do).
//
// Decoders: out[n_blocks * elements] from n_blocks blocks at `blocks` (any alignment).
// Encoders: n_blocks blocks into `out` from x[n_blocks * elements]; deterministic; a NaN in x gives
// some valid block, never undefined behaviour.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/block_formats.hpp"
#include "pagedserve/weight.hpp"

// Bit-identical decoding needs every product rounded on its own, as ggml's x86 build does: no fused
// multiply-add. g++ in ISO mode (this project's) never contracts; clang does within an expression
// unless told not to, which matters on targets with FMA (ARM64, -march=native).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace pagedserve::ggml_blocks {

// An fp16 field of a block, as fp32.
inline float load_f16(const std::byte* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// Stores d as fp16, clamped to fp16's finite range (NaN stored as 0) so a block never holds a
// non-finite scale; returns the value stored (as fp32), which is what the decoder multiplies by.
inline float store_f16(std::byte* p, float d) {
  constexpr float f16_max = 65504.0f;
  if (d != d) d = 0.0f;
  const std::uint16_t h = f32_to_f16(d < -f16_max ? -f16_max : d > f16_max ? f16_max : d);
  std::memcpy(p, &h, 2);
  return f16_to_f32(h);
}

inline std::uint8_t byte_at(const std::byte* p, std::size_t i) { return static_cast<std::uint8_t>(p[i]); }

// v clamped to [lo, hi]; NaN -> lo (so NaN never reaches an integer conversion).
inline float clamp_to(float v, float lo, float hi) {
  v = v > lo ? v : lo;
  return v < hi ? v : hi;
}
// The nearest integer to v in [lo, hi] (as a float, or an int), ties to even (ggml's nearest_int);
// NaN -> lo. Rounds by adding and subtracting 1.5 * 2^23, exact for |v| < 2^22 (the clamp's bounds
// are small), and in float so that loops over a block vectorize.
inline float nearest_level(float v, float lo, float hi) {
  const float c = clamp_to(v, lo, hi);
  return (c + 12582912.0f) - 12582912.0f;
}
inline int nearest_in(float v, int lo, int hi) {
  return static_cast<int>(nearest_level(v, static_cast<float>(lo), static_cast<float>(hi)));
}

// IQ4's level table and the K-quants' 12-byte scale/min packing are the kernels' (one definition).
using kernels::iq4_levels;
using kernels::k4_scale_min;

// ---- The scale searches (ggml_block_fits.cpp) ----

// Error weights of n values: rms(x) + |x|, so errors on large weights count more yet small ones still
// count (ggml's choice for q4_K and q5_K, used here for every searched format).
void error_weights(float* w, const float* x, int n);

// x ~ scale * l - offset, l in [0, nmax]; offset >= 0 unless the format stores it signed.
struct affine_fit {
  float scale = 0.0f, offset = 0.0f;
};
// Candidate inverse scales (nmax + first + step * k) / (max - min) for k = 0..n_steps.
struct scale_grid {
  float first, step;
  int n_steps;
};
// The (scale, offset) of least weighted squared error over the grid, starting from the plain min/max
// quantizer's (so never worse than it). any_offset: q4_1/q5_1's signed m; otherwise the K-quants'
// subtracted min (offset >= 0, levels from min(x, 0)).
affine_fit fit_affine(const float* x, const float* w, int n, int nmax, scale_grid grid, bool any_offset);
// The scale of least weighted squared error for x ~ scale * l, l in [-nmax, nmax - 1] (the value of
// largest magnitude near -nmax, the side with one more level).
float fit_symmetric(const float* x, const float* w, int n, int nmax);

void dequantize_q4_0(float* out, const std::byte* blocks, std::size_t n_blocks);
void dequantize_q4_1(float* out, const std::byte* blocks, std::size_t n_blocks);
void dequantize_q5_0(float* out, const std::byte* blocks, std::size_t n_blocks);
void dequantize_q5_1(float* out, const std::byte* blocks, std::size_t n_blocks);
void dequantize_q8_0(float* out, const std::byte* blocks, std::size_t n_blocks);
void dequantize_q2_k(float* out, const std::byte* blocks, std::size_t n_blocks);
void dequantize_q3_k(float* out, const std::byte* blocks, std::size_t n_blocks);
void dequantize_q4_k(float* out, const std::byte* blocks, std::size_t n_blocks);
void dequantize_q5_k(float* out, const std::byte* blocks, std::size_t n_blocks);
void dequantize_q6_k(float* out, const std::byte* blocks, std::size_t n_blocks);
void dequantize_iq4_nl(float* out, const std::byte* blocks, std::size_t n_blocks);
void dequantize_iq4_xs(float* out, const std::byte* blocks, std::size_t n_blocks);

void quantize_q4_0(std::byte* out, const float* x, std::size_t n_blocks);
void quantize_q4_1(std::byte* out, const float* x, std::size_t n_blocks);
void quantize_q5_0(std::byte* out, const float* x, std::size_t n_blocks);
void quantize_q5_1(std::byte* out, const float* x, std::size_t n_blocks);
void quantize_q8_0(std::byte* out, const float* x, std::size_t n_blocks);
void quantize_q2_k(std::byte* out, const float* x, std::size_t n_blocks);
void quantize_q3_k(std::byte* out, const float* x, std::size_t n_blocks);
void quantize_q4_k(std::byte* out, const float* x, std::size_t n_blocks);
void quantize_q5_k(std::byte* out, const float* x, std::size_t n_blocks);
void quantize_q6_k(std::byte* out, const float* x, std::size_t n_blocks);
void quantize_iq4_nl(std::byte* out, const float* x, std::size_t n_blocks);
void quantize_iq4_xs(std::byte* out, const float* x, std::size_t n_blocks);

}  // namespace pagedserve::ggml_blocks
