#pragma once
// The block-quantized matmul's pieces shared between the tables: the quantizer every table uses, the
// scalar dot of one weight row with one token (each SIMD table runs it for the formats it has no fast
// path for), and the SIMD matmuls (block_dot_<isa>.cpp, each compiled with its own flags).
#include <cstddef>

#include "pagedserve/weight.hpp"

namespace pagedserve::kernels::detail {

// kernel_table::quantize_activations (block_activations.cpp), the same for every table.
void quantize_activations(std::byte* xq, const float* x, dtype wtype, int n);

// One weight row (n weights of type t) · one token's quantized activations, as ggml's generic
// vec_dot: an exact int32 sum per block (or sub-block), then fp32 products accumulated block by block.
float block_dot_scalar(dtype t, const void* w_row, const std::byte* xq, int n);

// kernel_table::matmul_blocks of the scalar table (block_dot_scalar.cpp) and the SIMD ones.
void matmul_blocks_scalar(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end);
void matmul_blocks_avx2(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end);
void matmul_blocks_avx2_vnni(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end);
void matmul_blocks_avx512(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end);
void matmul_blocks_avx512_vnni(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin,
                               int o_end);

}  // namespace pagedserve::kernels::detail
