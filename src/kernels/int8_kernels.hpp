#pragma once
// The SIMD int8 kernels, each in its own file with its own ISA flags (CMakeLists.txt picks them by
// suffix), for the tables of table_avx2.cpp and table_avx512.cpp; see kernel_table::matmul_i8 and
// quantize_token_u8 for what they compute.
#include <cstdint>

#include "pagedserve/weight.hpp"

namespace pagedserve::kernels::detail {

// vpmaddwd over int16-widened bytes (int8_avx2.cpp) and AVX-VNNI vpdpbusd (int8_avx2_vnni.cpp).
void matmul_i8_avx2(float* out, const std::uint8_t* xq, const float* x_scales, const weight& w, int n_tokens,
                    int p_begin, int p_end);
void matmul_i8_avx2_vnni(float* out, const std::uint8_t* xq, const float* x_scales, const weight& w, int n_tokens,
                         int p_begin, int p_end);
float quantize_token_u8_avx2(std::uint8_t* xq, const float* x, int n, int n_pad);

// The same on zmm (int8_avx512.cpp, int8_avx512_vnni.cpp).
void matmul_i8_avx512(float* out, const std::uint8_t* xq, const float* x_scales, const weight& w, int n_tokens,
                      int p_begin, int p_end);
void matmul_i8_avx512_vnni(float* out, const std::uint8_t* xq, const float* x_scales, const weight& w, int n_tokens,
                           int p_begin, int p_end);
float quantize_token_u8_avx512(std::uint8_t* xq, const float* x, int n, int n_pad);

}  // namespace pagedserve::kernels::detail
