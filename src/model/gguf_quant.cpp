// ggml's Q8_0 and Q4_0 block formats, bit-exact with ggml-quants.c's dequantize_row_q8_0 /
// dequantize_row_q4_0 and quantize_row_q8_0_ref / quantize_row_q4_0_ref. Both store 32 weights per
// block behind one fp16 scale d.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "pagedserve/gguf.hpp"
#include "pagedserve/weight.hpp"

namespace pagedserve {
namespace {

constexpr std::size_t block = 32;
constexpr std::size_t q8_0_bytes = 2 + block;      // fp16 d, int8 q[32]
constexpr std::size_t q4_0_bytes = 2 + block / 2;  // fp16 d, nibbles[16]

float block_scale(const std::byte* b) {
  std::uint16_t h;
  std::memcpy(&h, b, 2);
  return f16_to_f32(h);
}

void store_scale(std::byte* b, float d) {
  const std::uint16_t h = f32_to_f16(d);
  std::memcpy(b, &h, 2);
}

}  // namespace

void gguf_dequantize_q8_0(float* out, const std::byte* blocks, std::size_t n) {
  for (std::size_t i = 0; i < n / block; ++i) {
    const std::byte* b = blocks + i * q8_0_bytes;
    const float d = block_scale(b);
    for (std::size_t j = 0; j < block; ++j) out[i * block + j] = static_cast<float>(static_cast<std::int8_t>(b[2 + j])) * d;
  }
}

void gguf_dequantize_q4_0(float* out, const std::byte* blocks, std::size_t n) {
  for (std::size_t i = 0; i < n / block; ++i) {
    const std::byte* b = blocks + i * q4_0_bytes;
    const float d = block_scale(b);
    for (std::size_t j = 0; j < block / 2; ++j) {
      const auto q = static_cast<unsigned>(b[2 + j]);
      out[i * block + j] = static_cast<float>(static_cast<int>(q & 0x0f) - 8) * d;
      out[i * block + j + block / 2] = static_cast<float>(static_cast<int>(q >> 4) - 8) * d;
    }
  }
}

std::vector<std::byte> gguf_quantize_q8_0(std::span<const float> x) {
  std::vector<std::byte> out(x.size() / block * q8_0_bytes);
  for (std::size_t i = 0; i < x.size() / block; ++i) {
    const float* v = x.data() + i * block;
    float amax = 0.0f;
    for (std::size_t j = 0; j < block; ++j) amax = std::max(amax, std::fabs(v[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    std::byte* b = out.data() + i * q8_0_bytes;
    store_scale(b, d);
    for (std::size_t j = 0; j < block; ++j)
      b[2 + j] = static_cast<std::byte>(static_cast<std::int8_t>(std::roundf(v[j] * id)));
  }
  return out;
}

std::vector<std::byte> gguf_quantize_q4_0(std::span<const float> x) {
  std::vector<std::byte> out(x.size() / block * q4_0_bytes);
  for (std::size_t i = 0; i < x.size() / block; ++i) {
    const float* v = x.data() + i * block;
    float amax = 0.0f, max = 0.0f;  // the value of largest magnitude, sign kept: it maps to -8 exactly
    for (std::size_t j = 0; j < block; ++j)
      if (amax < std::fabs(v[j])) amax = std::fabs(v[j]), max = v[j];
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    std::byte* b = out.data() + i * q4_0_bytes;
    store_scale(b, d);
    for (std::size_t j = 0; j < block / 2; ++j) {
      const int lo = std::min(15, static_cast<int>(static_cast<std::int8_t>(v[j] * id + 8.5f)));
      const int hi = std::min(15, static_cast<int>(static_cast<std::int8_t>(v[j + block / 2] * id + 8.5f)));
      b[2 + j] = static_cast<std::byte>(lo | (hi << 4));
    }
  }
  return out;
}

}  // namespace pagedserve
