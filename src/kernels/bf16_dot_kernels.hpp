#pragma once
// kernel_table::matmul_rows_bf16 on AVX512-BF16 (bf16_dot_avx512_bf16.cpp, its own ISA flags), for
// the avx512_bf16 table of table_avx512.cpp.
#include <cstdint>

namespace pagedserve::kernels::detail {

// out[t, o] = sum_i bf16(x[t, i]) * w[o, i] with vdpbf16ps: activations rounded to bf16 (nearest
// even), products exact, summed in fp32 pairwise per lane (odd element, then even) and folded by
// reduce16. Each output depends only on its x row and w row (batch invariant), but differs from the
// fp32 path over widened weights by the activations' rounding.
void matmul_rows_bf16_dot(float* out, const float* x, const std::uint16_t* w, int n_tokens, int n_in, int n_out,
                          int o_begin, int o_end);

}  // namespace pagedserve::kernels::detail
