// The portable inner loops: plain C++ the compiler may auto-vectorise for the baseline ISA.
// Each output element is reduced in index order, whatever the batch, so results are batch invariant.
#include <cmath>

#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

float dot_scalar(const float* a, const float* b, int n) {
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void matmul_rows_scalar(float* out, const float* x, const float* w, int n_tokens, int n_in, int n_out,
                        int o_begin, int o_end) {
  for (int o = o_begin; o < o_end; ++o) {
    const float* wo = w + static_cast<std::size_t>(o) * n_in;
    for (int t = 0; t < n_tokens; ++t)
      out[static_cast<std::size_t>(t) * n_out + o] = dot_scalar(x + static_cast<std::size_t>(t) * n_in, wo, n_in);
  }
}

float sum_squares_scalar(const float* x, int n) { return dot_scalar(x, x, n); }

void scale_mul_scalar(float* out, const float* x, const float* weight, float scale, int n) {
  for (int i = 0; i < n; ++i) out[i] = weight[i] * (scale * x[i]);
}

void axpy_scalar(float* y, float a, const float* x, int n) {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

void swiglu_scalar(float* gate, const float* up, int n) {
  for (int i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g * (1.0f / (1.0f + std::exp(-g))) * up[i];
  }
}

}  // namespace

extern const kernel_table kernel_table_scalar = {
    isa::scalar, matmul_rows_scalar, sum_squares_scalar, scale_mul_scalar, dot_scalar, axpy_scalar, swiglu_scalar,
};

}  // namespace pagedserve::kernels
