#pragma once
// The block-quantized matmul's entries for the tables: the activation quantizer every table shares,
// and each table's matmul_blocks (block_dot_scalar.cpp; block_dot_<isa>.cpp, each compiled with its
// own flags).
#include <cstddef>

#include "model/ggml_block_panels.hpp"
#include "pagedserve/weight.hpp"

namespace pagedserve::kernels::detail {

// The block types the avx2 / avx2_vnni tables' matmul_blocks read as row panels (block_panel_*_avx2.hpp):
// all with a panel layout.
constexpr bool block_panels_avx2(dtype t) { return block_panels_defined(t); }

// kernel_table::quantize_activations (block_activations.cpp), and the AVX-512 tables' version of it
// (block_activations_avx512.cpp): the same bytes in every table.
void quantize_activations(std::byte* xq, const float* x, dtype wtype, int n);
void quantize_activations_avx512(std::byte* xq, const float* x, dtype wtype, int n);

// kernel_table::matmul_blocks of the scalar table (block_dot_scalar.cpp) and the SIMD ones.
void matmul_blocks_scalar(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end);
void matmul_blocks_avx2(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end);
void matmul_blocks_avx2_vnni(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end);
void matmul_blocks_avx512(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end);
void matmul_blocks_avx512_vnni(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin,
                               int o_end);

}  // namespace pagedserve::kernels::detail
