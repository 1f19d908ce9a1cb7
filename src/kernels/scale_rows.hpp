#pragma once
// The last step of every table's int8 matmul: each output column o times its weight row's scale.
// Internal linkage on purpose: each table's file compiles it with its own ISA flags, and a shared
// inline definition could let the linker hand the AVX-512 copy to the scalar table.
#include <cstddef>

namespace pagedserve::kernels {
namespace {

// out[t, o] *= scales[o] for t < n_tokens, o in [o_begin, o_end); out: [n_tokens, n_out].
[[maybe_unused]] void scale_rows(float* out, const float* scales, int n_tokens, int n_out, int o_begin, int o_end) {
  for (int t = 0; t < n_tokens; ++t) {
    float* ot = out + static_cast<std::size_t>(t) * n_out;
    for (int o = o_begin; o < o_end; ++o) ot[o] = scales[o] * ot[o];
  }
}

}  // namespace
}  // namespace pagedserve::kernels
