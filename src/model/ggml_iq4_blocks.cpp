// IQ4_NL and IQ4_XS: 4-bit indices into a fixed non-linear table of 16 levels (iq4_levels), denser
// near zero where most weights are. IQ4_NL is a 32-weight block behind one fp16 d; IQ4_XS is a
// 256-weight super-block whose eight 32-weight sub-blocks each have a 6-bit scale (minus 32) times
// the fp16 d. Nibbles as q4_0: weight j < 16 of a 32-weight group is the low nibble of byte j, weight
// j + 16 its high nibble.
#include "model/ggml_block_formats.hpp"

namespace pagedserve::ggml_blocks {

// IQ4_NL (18 bytes): d, qs[16].
void dequantize_iq4_nl(float* out, const std::byte* blocks, std::size_t n_blocks) {
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
void dequantize_iq4_xs(float* out, const std::byte* blocks, std::size_t n_blocks) {
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

}  // namespace pagedserve::ggml_blocks
