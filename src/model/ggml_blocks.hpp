#pragma once
// ggml's block-quantized weight formats, as llama.cpp's GGUF files store them: each row of a matrix is
// a run of fixed-size blocks, each block a few scales plus packed integers for 32 (legacy types) or
// 256 (K-quants, IQ4_XS) consecutive weights. pagedserve keeps such matrices as stored (a weight view
// into the file mapping, type one of the block dtypes below) and its kernels read the blocks directly.
//
// Layouts (bytes per block / weights per block; d, dmin and m are fp16):
//   q4_0  18/32   d, 16 bytes of nibbles           w = d * (q - 8)
//   q4_1  20/32   d, m, 16 bytes of nibbles         w = d * q + m
//   q5_0  22/32   d, qh[4], nibbles                 w = d * (q - 16), q's 5th bit from qh
//   q5_1  24/32   d, m, qh[4], nibbles              w = d * q + m
//   q8_0  34/32   d, int8[32]                       w = d * q
//   q2_k  84/256  scales[16] (4-bit scale | 4-bit min), qs[64], d, dmin
//   q3_k 110/256  hmask[32], qs[64], scales[12] (6-bit, signed by -32), d
//   q4_k 144/256  d, dmin, scales[12] (6-bit scale and min per 32), qs[128]
//   q5_k 176/256  d, dmin, scales[12], qh[32], qs[128]
//   q6_k 210/256  ql[128], qh[64], int8 scales[16] (per 16), d
//   iq4_nl 18/32  d, nibbles indexing the non-linear table kvalues_iq4nl
//   iq4_xs 136/256 d, scales_h (u16), scales_l[4], qs[128]: 6-bit scale per 32, iq4_nl's table
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "pagedserve/weight.hpp"

namespace pagedserve {

struct block_layout {
  int elements = 0;  // weights per block (32 or 256); 0 for a plain dtype
  int bytes = 0;     // bytes per block
};

constexpr block_layout block_layout_of(dtype t) {
  switch (t) {
    case dtype::q4_0: return {32, 18};
    case dtype::q4_1: return {32, 20};
    case dtype::q5_0: return {32, 22};
    case dtype::q5_1: return {32, 24};
    case dtype::q8_0: return {32, 34};
    case dtype::q2_k: return {256, 84};
    case dtype::q3_k: return {256, 110};
    case dtype::q4_k: return {256, 144};
    case dtype::q5_k: return {256, 176};
    case dtype::q6_k: return {256, 210};
    case dtype::iq4_nl: return {32, 18};
    case dtype::iq4_xs: return {256, 136};
    default: return {};
  }
}

constexpr bool is_block_quantized(dtype t) { return block_layout_of(t).elements != 0; }

// Bytes of one row of `cols` weights (cols a whole number of blocks).
constexpr std::size_t block_row_bytes(dtype t, int cols) {
  const block_layout l = block_layout_of(t);
  return static_cast<std::size_t>(cols / l.elements) * static_cast<std::size_t>(l.bytes);
}

// The ggml type number of a dtype (GGML_TYPE_*: f32 0, f16 1, q4_0 2, ..., iq4_xs 23, bf16 30), and back;
// nullopt for a number with no dtype here (and for i8, which is pagedserve's own layout).
std::optional<std::uint32_t> ggml_type_of(dtype t);
std::optional<dtype> dtype_of_ggml_type(std::uint32_t type);

// ggml's dequantize_row_<type> (its to_float): out[n] from the blocks holding n weights, n a whole
// number of blocks. Bit-identical to ggml's arithmetic (same products, same order).
void dequantize_blocks(dtype t, float* out, const std::byte* blocks, std::size_t n);

// Quantizes x[n] (a whole number of blocks) into type t's blocks (used by the GGUF writer, the tests'
// model files and --quantize int4); dequantize_blocks of the result approximates x. q4_0 and q8_0
// follow ggml's reference rule (llama-quantize's blocks, bit for bit); the other types search each
// block's scale (and offset) for the least squared error, as ggml's K-quant and IQ4 quantizers do.
// Deterministic; scales are clamped to fp16's finite range; NaN inputs still give valid blocks.
std::vector<std::byte> quantize_blocks(dtype t, std::span<const float> x);

}  // namespace pagedserve
