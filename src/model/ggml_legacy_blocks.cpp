// ggml's 32-weight block formats: q4_0, q4_1, q5_0, q5_1 and q8_0. Each block is an fp16 scale d (and
// for the _1 types an fp16 offset m) and 32 integers. The 4-bit types keep weight j < 16 in the low
// nibble of byte j and weight j + 16 in its high nibble; the 5-bit types add a 32-bit word qh (little
// endian) whose bit j is weight j's fifth bit.
//
// q4_0 and q8_0 encode by ggml's reference rules (scale from the block's value of largest magnitude,
// round to nearest), so those blocks are the ones llama-quantize writes without an importance matrix
// and the test models that mirror that rule keep matching. q4_1, q5_0 and q5_1 search their scale
// (ggml_block_fits.cpp), which lowers their error below the reference rules'.
#include <algorithm>
#include <cmath>

#include "model/ggml_block_formats.hpp"

namespace pagedserve::ggml_blocks {
namespace {

constexpr std::size_t qk = 32;

std::uint32_t load_u32(const std::byte* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // little endian, as ggml's memcpy into a uint32_t on the hosts it supports
}

// Weight j's fifth bit (bit j of qh) as 16 or 0, unpacked first so the decoding loop vectorizes.
void fifth_bits(std::uint8_t* high, std::uint32_t qh) {
  for (std::size_t j = 0; j < qk; ++j) high[j] = static_cast<std::uint8_t>(((qh >> j) & 1u) << 4);
}

// The block's value of largest magnitude, sign kept (the _0 types map it to their most negative level).
float signed_absmax(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (std::size_t j = 0; j < qk; ++j)
    if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), max = x[j];
  return max;
}

// Packs 32 levels (each < 2^bits, bits 4 or 5) into the nibbles at qs and, for 5 bits, the word qh.
void pack_nibbles(std::byte* qs, const std::uint8_t* l) {
  for (std::size_t j = 0; j < qk / 2; ++j) qs[j] = static_cast<std::byte>((l[j] & 0x0f) | ((l[j + qk / 2] & 0x0f) << 4));
}
void pack_high_bits(std::byte* qh, const std::uint8_t* l) {
  std::uint32_t h = 0;
  for (std::size_t j = 0; j < qk; ++j) h |= static_cast<std::uint32_t>(l[j] >> 4) << j;
  std::memcpy(qh, &h, 4);
}

// Levels trunc(x * id + offset) in [0, top]: the reference rule's rounding (offset = zero level + 0.5,
// then truncation).
void levels_truncated(std::uint8_t* l, const float* x, float id, float offset, float top) {
  for (std::size_t j = 0; j < qk; ++j) l[j] = static_cast<std::uint8_t>(clamp_to(x[j] * id + offset, 0.0f, top));
}
// q4_1 / q5_1: the least-squares affine search (ggml_block_fits.cpp) with a signed offset m.
void quantize_affine_32(std::byte* out, const float* x, int nmax) {
  float w[qk];
  error_weights(w, x, static_cast<int>(qk));
  const affine_fit f = fit_affine(x, w, static_cast<int>(qk), nmax, {-1.0f, 0.1f, 20}, true);
  const float d = store_f16(out, f.scale), m = store_f16(out + 2, -f.offset);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  std::uint8_t l[qk];
  for (std::size_t j = 0; j < qk; ++j) l[j] = static_cast<std::uint8_t>(nearest_in((x[j] - m) * id, 0, nmax));
  if (nmax > 15) pack_high_bits(out + 4, l);
  pack_nibbles(out + (nmax > 15 ? 8 : 4), l);
}

}  // namespace

void dequantize_q4_0(float* __restrict out, const std::byte* __restrict blocks, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, blocks += 18, out += qk) {
    const float d = load_f16(blocks);
    for (std::size_t j = 0; j < qk / 2; ++j) {
      const std::uint8_t q = byte_at(blocks, 2 + j);
      out[j] = static_cast<float>((q & 0x0f) - 8) * d;
      out[j + qk / 2] = static_cast<float>((q >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_1(float* __restrict out, const std::byte* __restrict blocks, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, blocks += 20, out += qk) {
    const float d = load_f16(blocks), m = load_f16(blocks + 2);
    for (std::size_t j = 0; j < qk / 2; ++j) {
      const std::uint8_t q = byte_at(blocks, 4 + j);
      out[j] = static_cast<float>(q & 0x0f) * d + m;
      out[j + qk / 2] = static_cast<float>(q >> 4) * d + m;
    }
  }
}

void dequantize_q5_0(float* __restrict out, const std::byte* __restrict blocks, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, blocks += 22, out += qk) {
    const float d = load_f16(blocks);
    std::uint8_t high[qk];
    fifth_bits(high, load_u32(blocks + 2));
    for (std::size_t j = 0; j < qk / 2; ++j) {
      const std::uint8_t q = byte_at(blocks, 6 + j);
      const int lo = (q & 0x0f) | high[j];
      const int hi = (q >> 4) | high[j + 16];
      out[j] = static_cast<float>(lo - 16) * d;
      out[j + qk / 2] = static_cast<float>(hi - 16) * d;
    }
  }
}

void dequantize_q5_1(float* __restrict out, const std::byte* __restrict blocks, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, blocks += 24, out += qk) {
    const float d = load_f16(blocks), m = load_f16(blocks + 2);
    std::uint8_t high[qk];
    fifth_bits(high, load_u32(blocks + 4));
    for (std::size_t j = 0; j < qk / 2; ++j) {
      const std::uint8_t q = byte_at(blocks, 8 + j);
      const int lo = (q & 0x0f) | high[j];
      const int hi = (q >> 4) | high[j + 16];
      out[j] = static_cast<float>(lo) * d + m;
      out[j + qk / 2] = static_cast<float>(hi) * d + m;
    }
  }
}

void dequantize_q8_0(float* __restrict out, const std::byte* __restrict blocks, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, blocks += 34, out += qk) {
    const float d = load_f16(blocks);
    for (std::size_t j = 0; j < qk; ++j) out[j] = static_cast<float>(static_cast<std::int8_t>(blocks[2 + j])) * d;
  }
}

void quantize_q4_0(std::byte* out, const float* x, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, out += 18, x += qk) {
    const float d = signed_absmax(x) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_f16(out, d);
    std::uint8_t l[qk];
    levels_truncated(l, x, id, 8.5f, 15.0f);
    pack_nibbles(out + 2, l);
  }
}

void quantize_q4_1(std::byte* out, const float* x, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, out += 20, x += qk) quantize_affine_32(out, x, 15);
}

void quantize_q5_1(std::byte* out, const float* x, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, out += 24, x += qk) quantize_affine_32(out, x, 31);
}

// q5_0: the least-squares symmetric search (levels -16..15).
void quantize_q5_0(std::byte* out, const float* x, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, out += 22, x += qk) {
    float w[qk];
    error_weights(w, x, static_cast<int>(qk));
    const float d = store_f16(out, fit_symmetric(x, w, static_cast<int>(qk), 16));
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    std::uint8_t l[qk];
    for (std::size_t j = 0; j < qk; ++j) l[j] = static_cast<std::uint8_t>(nearest_in(x[j] * id, -16, 15) + 16);
    pack_high_bits(out + 2, l);
    pack_nibbles(out + 6, l);
  }
}

void quantize_q8_0(std::byte* out, const float* x, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, out += 34, x += qk) {
    float amax = 0.0f;
    for (std::size_t j = 0; j < qk; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_f16(out, d);
    for (std::size_t j = 0; j < qk; ++j)  // round half away from zero, as roundf
      out[2 + j] = static_cast<std::byte>(static_cast<std::int8_t>(std::round(clamp_to(x[j] * id, -127.0f, 127.0f))));
  }
}

}  // namespace pagedserve::ggml_blocks
