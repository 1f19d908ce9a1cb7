// IQ4_NL and IQ4_XS: 4-bit indices into a fixed non-linear table of 16 levels (iq4_levels), denser
// near zero where most weights are. IQ4_NL is a 32-weight block behind one fp16 d; IQ4_XS is a
// 256-weight super-block whose eight 32-weight sub-blocks each have a 6-bit scale (minus 32) times
// the fp16 d. Nibbles as q4_0: weight j < 16 of a 32-weight group is the low nibble of byte j, weight
// j + 16 its high nibble.
#include <cmath>

#include "model/ggml_block_formats.hpp"

namespace pagedserve::ggml_blocks {
namespace {

// The index of the level nearest v. The midpoints between consecutive levels are multiples of 0.5,
// so a table over half-unit buckets of [-128, 128) holds the answer for every bucket (a value exactly
// on a midpoint may take either neighbour: both are equally near).
struct iq4_index_table {
  std::uint8_t index[512];
  constexpr iq4_index_table() : index{} {
    for (int b = 0; b < 512; ++b) {
      const float centre = static_cast<float>(b - 256) * 0.5f + 0.25f;
      int i = 0;
      while (i < 15 && centre > 0.5f * static_cast<float>(iq4_levels[i] + iq4_levels[i + 1])) ++i;
      index[b] = static_cast<std::uint8_t>(i);
    }
  }
};
constexpr iq4_index_table iq4_index;

int nearest_iq4_index(float v) {
  return iq4_index.index[static_cast<int>(clamp_to(2.0f * v + 256.0f, 0.0f, 511.0f))];
}

// The scale d of one 32-weight group for x ~ d * level[index], by weighted squared error (weights
// rms + |x|, as the K-quants'). Candidates: the value of largest magnitude mapped near either end of
// the (asymmetric) table, -127 or 113, within 7 levels; each candidate's levels refitted by least
// squares; the best maximises (sum w x q)^2 / sum w q^2.
float fit_iq4_group(const float* x) {
  float amax = 0.0f, max = 0.0f, sum_x2 = 0.0f;
  for (int j = 0; j < 32; ++j) {
    sum_x2 += x[j] * x[j];
    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
  }
  if (!(amax > 0.0f)) return 0.0f;
  const float rms = std::sqrt(sum_x2 / 32.0f);
  float w[32];
  for (int j = 0; j < 32; ++j) w[j] = rms + std::fabs(x[j]);
  float best_d = max / -127.0f;
  double best_gain = -1.0;
  for (const float extreme : {-127.0f, 113.0f})
    for (int k = -7; k <= 7; ++k) {
      const float id = (extreme + static_cast<float>(k)) / max;
      float swqx = 0.0f, swq2 = 0.0f;
      for (int j = 0; j < 32; ++j) {
        const float q = iq4_levels[nearest_iq4_index(id * x[j])];
        swqx += w[j] * q * x[j];
        swq2 += w[j] * q * q;
      }
      if (!(swq2 > 0.0f)) continue;
      const double gain = static_cast<double>(swqx) * swqx / swq2;
      if (gain > best_gain) best_gain = gain, best_d = swqx / swq2;
    }
  return best_d;
}

// A 32-weight group's nibbles against the decoder's scale d (q4_0's nibble order).
void pack_iq4_group(std::uint8_t* qs, const float* x, float d) {
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < 16; ++j)
    qs[j] = static_cast<std::uint8_t>(nearest_iq4_index(id * x[j]) | (nearest_iq4_index(id * x[j + 16]) << 4));
}

}  // namespace

// IQ4_NL (18 bytes): d, qs[16].
void dequantize_iq4_nl(float* __restrict out, const std::byte* __restrict blocks, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, blocks += 18, out += 32) {
    const float d = load_f16(blocks);
    for (std::size_t j = 0; j < 16; ++j) {
      const std::uint8_t q = byte_at(blocks, 2 + j);
      out[j] = d * static_cast<float>(iq4_levels[q & 0x0f]);
      out[j + 16] = d * static_cast<float>(iq4_levels[q >> 4]);
    }
  }
}

// IQ4_XS (136 bytes): d, u16 scales_h, scales_l[4], qs[128]. Sub-block b's scale: low nibble of
// scales_l[b / 2] (b even) or its high nibble (b odd), top two bits = bits 2b..2b+1 of scales_h.
void dequantize_iq4_xs(float* __restrict out, const std::byte* __restrict blocks, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, blocks += 136) {
    const float d = load_f16(blocks);
    std::uint16_t scales_h;
    std::memcpy(&scales_h, blocks + 2, 2);
    const auto* scales_l = reinterpret_cast<const std::uint8_t*>(blocks) + 4;
    const auto* qs = scales_l + 4;
    for (int b = 0; b < 8; ++b, qs += 16, out += 32) {
      const int ls = ((scales_l[b / 2] >> (4 * (b % 2))) & 0x0f) | (((scales_h >> (2 * b)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 16; ++j) {
        out[j] = dl * static_cast<float>(iq4_levels[qs[j] & 0x0f]);
        out[j + 16] = dl * static_cast<float>(iq4_levels[qs[j] >> 4]);
      }
    }
  }
}

void quantize_iq4_nl(std::byte* out, const float* x, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, out += 18, x += 32) {
    const float d = store_f16(out, fit_iq4_group(x));
    pack_iq4_group(reinterpret_cast<std::uint8_t*>(out) + 2, x, d);
  }
}

// IQ4_XS: each group's scale, then those eight scales as signed 6-bit integers behind d (the largest
// in magnitude mapped to -32), and the nibbles against the scale the decoder will use.
void quantize_iq4_xs(std::byte* out, const float* x, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, out += 136, x += 256) {
    float scale[8], max_scale = 0.0f, amax = 0.0f;
    for (int b = 0; b < 8; ++b) {
      scale[b] = fit_iq4_group(x + 32 * b);
      if (std::fabs(scale[b]) > amax) amax = std::fabs(scale[b]), max_scale = scale[b];
    }
    const float d = store_f16(out, amax > 0.0f ? max_scale / -32.0f : 0.0f);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    auto* b = reinterpret_cast<std::uint8_t*>(out);
    std::uint16_t scales_h = 0;
    std::memset(b + 4, 0, 4);
    for (int g = 0; g < 8; ++g) {
      const int q = nearest_in(scale[g] * id, -32, 31);
      const unsigned stored = static_cast<unsigned>(q + 32);
      b[4 + g / 2] = static_cast<std::uint8_t>(b[4 + g / 2] | ((stored & 0x0f) << (4 * (g % 2))));
      scales_h = static_cast<std::uint16_t>(scales_h | ((stored >> 4) << (2 * g)));
      pack_iq4_group(b + 8 + 16 * g, x + 32 * g, d * static_cast<float>(q));
    }
    std::memcpy(b + 2, &scales_h, 2);
  }
}

}  // namespace pagedserve::ggml_blocks
