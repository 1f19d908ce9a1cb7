#pragma once
// A typed, read-only view of one weight matrix, so loaders can hand the kernels fp32, bf16, fp16 or
// int8 tensors straight from a file mapping (or from a buffer they converted) without copying them,
// and the exact scalar conversions between those formats.
//
// bf16 -> fp32 and fp16 -> fp32 are exact (every bf16/fp16 value is an fp32 value), which is what
// lets a bf16 matmul accumulate in fp32 with the same order, and so the same bits, as the fp32
// matmul over the up-converted weights.
//
// i8 is int8 quantization with one fp32 scale per output row (per channel, symmetric):
// w[o, i] ~= scales[o] * q[o, i], q in [-127, 127] (quantize.hpp makes them), stored packed in the
// layout the int8 kernels read (i8_index below); the matmul quantizes activations too (kernels.hpp).
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pagedserve {

// f32, bf16, f16: plain elements. i8: pagedserve's per-row int8 (below). q4_0 ... iq4_xs: ggml's
// block-quantized formats, kept as stored (ggml_blocks.hpp describes them).
// f8_e4m3 and f8_e5m2 are KV cache element types only (pagedserve/fp8.hpp), never a weight's.
enum class dtype : std::uint8_t { f32, bf16, f16, i8, q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs,
                                  f8_e4m3, f8_e5m2 };

std::string_view dtype_name(dtype t);  // "f32", "bf16", "f16", "i8", "q4_0", ..., "q4_k", ..., "iq4_xs"
// Bytes per element (an i8 matrix's row scales come on top: see weight::n_bytes); 0 for the block
// formats, whose size is per block (block_row_bytes).
constexpr std::size_t dtype_size(dtype t) {
  return t == dtype::f32 ? 4 : t == dtype::i8 || t == dtype::f8_e4m3 || t == dtype::f8_e5m2 ? 1
         : t == dtype::bf16 || t == dtype::f16                              ? 2
                                                                            : 0;
}

// A [rows, cols] row-major matrix (rows = output features, as HF's nn.Linear and llama2.c store
// them). data is null for an absent weight.
struct weight {
  const void* data = nullptr;
  dtype type = dtype::f32;
  int rows = 0;
  int cols = 0;
  // i8 only, else null; both padded with zeros to i8_padded_rows(rows) entries:
  const float* scales = nullptr;          // dequantization scale of each row
  const std::int32_t* row_sums = nullptr; // sum_i q[o, i] of each row (the int8 kernels' zero-point correction)
  // Block formats: 0 = rows as stored in the file; block_panel_rows = repacked at load into row panels
  // (model/ggml_block_panels.hpp), data then holds the panels of the rows padded to a whole panel.
  int panel_rows = 0;

  bool empty() const { return data == nullptr; }
  std::size_t n_elements() const { return static_cast<std::size_t>(rows) * cols; }
  // What a matmul streams: the elements; an i8 matrix's padded panels, row scales and row sums.
  std::size_t n_bytes() const;
  // The fp32 data; only valid when type == f32.
  const float* f32() const { return static_cast<const float*>(data); }
  const std::uint16_t* u16() const { return static_cast<const std::uint16_t*>(data); }
  const std::int8_t* i8() const { return static_cast<const std::int8_t*>(data); }
  bool operator==(const weight&) const = default;
};

// The i8 layout, packed at load so one 64-byte load feeds one vpdpbusd: panels of 16 output rows;
// inside a panel, groups of 4 consecutive columns, each group 64 bytes (row 0's 4 bytes, row 1's,
// ..., row 15's). Rows are padded to a multiple of 16 and columns to a multiple of 4, with zeros.
constexpr int i8_panel_rows = 16;
// Bytes of one row of a block-quantized dtype (ggml_blocks.hpp's block_row_bytes).
std::size_t block_row_bytes_of(dtype t, int cols);
constexpr int i8_padded_rows(int rows) { return (rows + i8_panel_rows - 1) / i8_panel_rows * i8_panel_rows; }
constexpr int i8_padded_cols(int cols) { return (cols + 3) / 4 * 4; }
// Bytes of the packed panels of a [rows, cols] matrix.
constexpr std::size_t i8_packed_size(int rows, int cols) {
  return static_cast<std::size_t>(i8_padded_rows(rows)) * static_cast<std::size_t>(i8_padded_cols(cols));
}
// Where q[o, i] of a [rows, cols] i8 matrix lives in its packed panels.
constexpr std::size_t i8_index(int cols, int o, int i) {
  const std::size_t panel = static_cast<std::size_t>(o / i8_panel_rows);
  return panel * i8_panel_rows * static_cast<std::size_t>(i8_padded_cols(cols)) +
         static_cast<std::size_t>(i / 4) * (4 * i8_panel_rows) + static_cast<std::size_t>(o % i8_panel_rows) * 4 + i % 4;
}

inline std::size_t weight::n_bytes() const {
  if (dtype_size(type) == 0) {
    const int stored_rows = panel_rows ? (rows + panel_rows - 1) / panel_rows * panel_rows : rows;
    return static_cast<std::size_t>(stored_rows) * block_row_bytes_of(type, cols);
  }
  if (type != dtype::i8) return n_elements() * dtype_size(type);
  return i8_packed_size(rows, cols) + static_cast<std::size_t>(i8_padded_rows(rows)) * (sizeof(float) + sizeof(std::int32_t));
}

inline weight weight_f32(const float* data, int rows, int cols) { return {data, dtype::f32, rows, cols}; }

// bf16 is the top half of an fp32.
inline float bf16_to_f32(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

// Round to nearest even, as torch's .to(torch.bfloat16); NaN stays a (quiet) NaN.
inline std::uint16_t f32_to_bf16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// IEEE half -> float, exact (subnormals, infinities and NaN included).
inline float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return std::bit_cast<float>(sign);
  // Subnormal half: normalise into an fp32 exponent.
  int e = -1;
  do {
    ++e;
    mant <<= 1;
  } while ((mant & 0x400u) == 0);
  return std::bit_cast<float>(sign | static_cast<std::uint32_t>(112 - e) << 23 | ((mant & 0x3ffu) << 13));
}

// float -> IEEE half, round to nearest even; overflow gives infinity.
std::uint16_t f32_to_f16(float f);

// One element of a block-quantized w, dequantized (its block decoded: for tests and lookups, not loops).
float block_weight_at(const weight& w, std::size_t i);

// One element of w as fp32 (any dtype).
inline float weight_at(const weight& w, std::size_t i) {
  switch (w.type) {
    case dtype::f32: return w.f32()[i];
    case dtype::bf16: return bf16_to_f32(w.u16()[i]);
    case dtype::f16: return f16_to_f32(w.u16()[i]);
    case dtype::i8: {
      const int o = static_cast<int>(i / static_cast<std::size_t>(w.cols)), c = static_cast<int>(i % static_cast<std::size_t>(w.cols));
      return w.scales[o] * static_cast<float>(w.i8()[i8_index(w.cols, o, c)]);
    }
    default: return block_weight_at(w, i);
  }
}

// out[cols] = row `row` of w, converted to fp32 (embedding lookups).
void weight_row_to_f32(float* out, const weight& w, int row);

}  // namespace pagedserve
