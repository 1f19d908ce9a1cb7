// Activation quantizers for the block-quantized matmuls, with the arithmetic of ggml's CPU backend on
// x86 (quantize_row_q8_0/q8_1's AVX path, quantize_row_q8_K_ref), so dot products here see the very
// integers llama.cpp's do. The AVX-512 tables run block_activations_avx512.cpp's copy of this arithmetic:
// the activations are the same bits everywhere.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "block_activations.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

// Round to nearest even, as vroundps with _MM_ROUND_NEAREST: ggml's nearest_int (the 1.5 * 2^23 trick,
// exact for |v| < 2^22; here |v| <= 127). Plain arithmetic, not a call to nearbyintf, so the loops
// vectorize: these run on one thread before every block matmul of a decode step.
inline int round_even(float v) {
  const float shifted = v + 12582912.0f;
  std::int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

// q8_0 / q8_1: d = max|x| / 127 stored as fp16, q = round(x * 127 / max|x|); q8_1 adds s = fp16(d * sum q).
void quantize_q8_32(act_block32* y, const float* x, int n, bool with_sum) {
  for (int b = 0; b < n / 32; ++b, x += 32) {
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::abs(x[i]));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int i = 0; i < 32; ++i) {
      const int q = round_even(x[i] * id);
      y[b].qs[i] = static_cast<std::int8_t>(q);
      sum += q;
    }
    y[b].d = f16_to_f32(f32_to_f16(d));
    y[b].s = with_sum ? f16_to_f32(f32_to_f16(d * static_cast<float>(sum))) : 0.0f;
  }
}

// q8_K: scale by -127 / (the element of largest magnitude, with its sign), so that element maps to -127;
// d = 1 / that scale, kept in fp32.
void quantize_q8_k(act_block256* y, const float* x, int n) {
  for (int b = 0; b < n / 256; ++b, x += 256) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < 256; ++i)
      if (std::abs(x[i]) > amax) {
        amax = std::abs(x[i]);
        max = x[i];
      }
    if (amax == 0.0f) {
      y[b].d = 0.0f;
      std::memset(y[b].qs, 0, sizeof y[b].qs);
      std::memset(y[b].bsums, 0, sizeof y[b].bsums);
      continue;
    }
    const float iscale = -127.0f / max;
    for (int i = 0; i < 256; ++i) y[b].qs[i] = static_cast<std::int8_t>(std::min(127, round_even(iscale * x[i])));
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * j + i];
      y[b].bsums[j] = static_cast<std::int16_t>(sum);
    }
    y[b].d = 1.0f / iscale;
  }
}

}  // namespace

std::size_t activation_row_bytes(dtype wtype, int n) {
  if (act_format_of(wtype) == act_format::q8_k) return static_cast<std::size_t>(n / 256) * sizeof(act_block256);
  return static_cast<std::size_t>(n / 32) * sizeof(act_block32);
}

namespace detail {

void quantize_activations(std::byte* xq, const float* x, dtype wtype, int n) {
  switch (act_format_of(wtype)) {
    case act_format::q8_0: quantize_q8_32(reinterpret_cast<act_block32*>(xq), x, n, false); return;
    case act_format::q8_1: quantize_q8_32(reinterpret_cast<act_block32*>(xq), x, n, true); return;
    case act_format::q8_k: quantize_q8_k(reinterpret_cast<act_block256*>(xq), x, n); return;
  }
}

}  // namespace detail
}  // namespace pagedserve::kernels
