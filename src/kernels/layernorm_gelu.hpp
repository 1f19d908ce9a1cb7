#pragma once
// GPT-2's LayerNorm and tanh-approximated GELU (kernel_table::layernorm, gelu_tanh): the portable
// loops (table_scalar.cpp), which every table uses for LayerNorm, and the SIMD GELUs of the AVX2 and
// AVX-512 tables, each over its own file's exp.
namespace pagedserve::kernels::detail {

void layernorm_scalar(float* out, const float* x, const float* weight, const float* bias, int n, float eps);
void gelu_tanh_scalar(float* x, int n);

}  // namespace pagedserve::kernels::detail
