#pragma once
// Random but valid ggml blocks: every packed byte random, every fp16 scale field a finite value of
// either sign, so decoders and kernels see every bit pattern of quants, sub-block scales and high bits.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/ggml_blocks.hpp"

namespace pagedserve::test {

inline constexpr dtype block_types[] = {dtype::q4_0, dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q8_0, dtype::q2_k,
                                        dtype::q3_k, dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_nl, dtype::iq4_xs};

// ggml's spelling of the type in its function names ("q4_K", "iq4_xs").
inline std::string ggml_suffix(dtype t) {
  std::string s(dtype_name(t));
  if (s.ends_with("_k")) s.back() = 'K';
  return s;
}

// Byte offsets of the fp16 fields (d, m, dmin) inside one block of t.
inline std::vector<int> f16_field_offsets(dtype t) {
  switch (t) {
    case dtype::q4_1: case dtype::q5_1: case dtype::q4_k: case dtype::q5_k: return {0, 2};
    case dtype::q2_k: return {80, 82};
    case dtype::q3_k: return {108};
    case dtype::q6_k: return {208};
    default: return {0};  // q4_0, q5_0, q8_0, iq4_nl, iq4_xs
  }
}

inline std::vector<std::byte> random_blocks(dtype t, int n_blocks, std::mt19937& rng, float max_scale = 0.05f) {
  const block_layout l = block_layout_of(t);
  std::vector<std::byte> out(static_cast<std::size_t>(n_blocks) * l.bytes);
  for (auto& b : out) b = static_cast<std::byte>(rng() & 0xffu);
  std::uniform_real_distribution<float> scale(-max_scale, max_scale);
  for (int i = 0; i < n_blocks; ++i)
    for (const int at : f16_field_offsets(t)) {
      const std::uint16_t h = f32_to_f16(scale(rng));
      std::memcpy(&out[static_cast<std::size_t>(i) * l.bytes + at], &h, 2);
    }
  return out;
}

}  // namespace pagedserve::test
