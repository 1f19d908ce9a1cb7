// Scalar conversions between the weight formats (exact widening, round-to-nearest-even narrowing).
#include "pagedserve/weight.hpp"

#include <cstring>
#include <vector>

#include "model/ggml_block_panels.hpp"
#include "model/ggml_blocks.hpp"

namespace pagedserve {

std::string_view dtype_name(dtype t) {
  switch (t) {
    case dtype::f32: return "f32";
    case dtype::bf16: return "bf16";
    case dtype::f16: return "f16";
    case dtype::i8: return "i8";
    case dtype::q4_0: return "q4_0";
    case dtype::q4_1: return "q4_1";
    case dtype::q5_0: return "q5_0";
    case dtype::q5_1: return "q5_1";
    case dtype::q8_0: return "q8_0";
    case dtype::q2_k: return "q2_k";
    case dtype::q3_k: return "q3_k";
    case dtype::q4_k: return "q4_k";
    case dtype::q5_k: return "q5_k";
    case dtype::q6_k: return "q6_k";
    case dtype::iq4_nl: return "iq4_nl";
    case dtype::iq4_xs: return "iq4_xs";
    case dtype::f8_e4m3: return "f8_e4m3";
    case dtype::f8_e5m2: return "f8_e5m2";
  }
  return "unknown";
}

std::uint16_t f32_to_f16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;  // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u; // >= 65520 rounds to infinity
  if (a >= 0x38800000u) {                       // a normal half: rebias the exponent, round the mantissa
    const std::uint32_t r = a - 0x38000000u;
    return sign | static_cast<std::uint16_t>((r + 0xfffu + ((r >> 13) & 1u)) >> 13);
  }
  // Subnormal or zero: adding 0.5 (ulp 2^-24) rounds |f| to a multiple of 2^-24 (nearest even), and
  // the count of those lands in the low mantissa bits; 2^-14 itself comes out as the smallest normal.
  const float rounded = std::bit_cast<float>(a) + 0.5f;
  return sign | static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(rounded) - 0x3f000000u);
}

void weight_row_to_f32(float* out, const weight& w, int row) {
  const std::size_t base = static_cast<std::size_t>(row) * w.cols;
  switch (w.type) {
    case dtype::f32: std::memcpy(out, w.f32() + base, static_cast<std::size_t>(w.cols) * sizeof(float)); return;
    case dtype::bf16:
      for (int i = 0; i < w.cols; ++i) out[i] = bf16_to_f32(w.u16()[base + i]);
      return;
    case dtype::f16:
      for (int i = 0; i < w.cols; ++i) out[i] = f16_to_f32(w.u16()[base + i]);
      return;
    case dtype::i8:
      for (int i = 0; i < w.cols; ++i) out[i] = w.scales[row] * static_cast<float>(w.i8()[i8_index(w.cols, row, i)]);
      return;
    default: {
      if (w.panel_rows == 0) {
        dequantize_blocks(w.type, out,
                          static_cast<const std::byte*>(w.data) + static_cast<std::size_t>(row) * block_row_bytes(w.type, w.cols),
                          static_cast<std::size_t>(w.cols));
        return;
      }
      thread_local std::vector<std::byte> blocks;  // grows to the widest row, then reused: no allocation per token
      blocks.resize(block_row_bytes(w.type, w.cols));
      block_panels_row(blocks.data(), w, row);
      dequantize_blocks(w.type, out, blocks.data(), static_cast<std::size_t>(w.cols));
      return;
    }
  }
}

std::size_t block_row_bytes_of(dtype t, int cols) { return block_row_bytes(t, cols); }

float block_weight_at(const weight& w, std::size_t i) {
  const block_layout l = block_layout_of(w.type);
  const std::size_t row = i / static_cast<std::size_t>(w.cols), col = i % static_cast<std::size_t>(w.cols);
  const std::size_t block = col / static_cast<std::size_t>(l.elements);
  std::vector<float> values(static_cast<std::size_t>(l.elements));
  const std::byte* row_blocks = static_cast<const std::byte*>(w.data) + row * block_row_bytes(w.type, w.cols);
  std::vector<std::byte> gathered;
  if (w.panel_rows) {
    gathered.resize(block_row_bytes(w.type, w.cols));
    block_panels_row(gathered.data(), w, static_cast<int>(row));
    row_blocks = gathered.data();
  }
  dequantize_blocks(w.type, values.data(), row_blocks + block * l.bytes, values.size());
  return values[col % static_cast<std::size_t>(l.elements)];
}

}  // namespace pagedserve
