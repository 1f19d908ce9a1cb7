// The portable inner loops: plain C++ the compiler may auto-vectorise for the baseline ISA.
// Each output element is reduced in index order, whatever the batch, so results are batch invariant.
#include <algorithm>
#include <cmath>

#include "attend_group.hpp"
#include "block_kernels.hpp"
#include "layernorm_gelu.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

inline float as_f32(float x) { return x; }
inline float as_f32(std::uint16_t h) { return f16_to_f32(h); }  // the fp16 K/V cache
inline float as_f32(std::int8_t q) { return q; }                 // the q8 K/V cache, before its row scale
inline float as_f32(fp8_e4m3 x) { return fp8_e4m3_to_f32(x.bits); }  // the fp8 K/V caches (scale 1.0)
inline float as_f32(fp8_e5m2 x) { return fp8_e5m2_to_f32(x.bits); }

// b is fp32, fp16, int8 or fp8 (widened exactly as it is read).
template <class B>
float dot_scalar(const float* a, const B* b, int n) {
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += a[i] * as_f32(b[i]);
  return sum;
}

void matmul_rows_scalar(float* out, const float* x, const float* w, int n_tokens, int n_in, int n_out,
                        int o_begin, int o_end) {
  for (int o = o_begin; o < o_end; ++o) {
    const float* wo = w + static_cast<std::size_t>(o) * n_in;
    for (int t = 0; t < n_tokens; ++t)
      out[static_cast<std::size_t>(t) * n_out + o] = dot_scalar<float>(x + static_cast<std::size_t>(t) * n_in, wo, n_in);
  }
}

// The same loop with each weight converted exactly to fp32 as it is read.
template <float (*to_f32)(std::uint16_t)>
void matmul_rows_16_scalar(float* out, const float* x, const std::uint16_t* w, int n_tokens, int n_in, int n_out,
                           int o_begin, int o_end) {
  for (int o = o_begin; o < o_end; ++o) {
    const std::uint16_t* wo = w + static_cast<std::size_t>(o) * n_in;
    for (int t = 0; t < n_tokens; ++t) {
      const float* xt = x + static_cast<std::size_t>(t) * n_in;
      float sum = 0.0f;
      for (int i = 0; i < n_in; ++i) sum += xt[i] * to_f32(wo[i]);
      out[static_cast<std::size_t>(t) * n_out + o] = sum;
    }
  }
}

// int8 x int8 over the packed panels, one panel and one token at a time: 16 int32 sums walk the
// panel's groups of 4 columns (exact, so the order is free), then the two scales.
void matmul_i8_scalar(float* out, const std::uint8_t* xq, const float* x_scales, const weight& w, int n_tokens,
                      int p_begin, int p_end) {
  const int k_pad = i8_padded_cols(w.cols), n_out = w.rows;
  for (int p = p_begin; p < p_end; ++p) {
    const std::int8_t* panel = w.i8() + static_cast<std::size_t>(p) * i8_panel_rows * k_pad;
    const int o0 = p * i8_panel_rows, n_rows = std::min(i8_panel_rows, n_out - o0);
    for (int t = 0; t < n_tokens; ++t) {
      const std::uint8_t* xt = xq + static_cast<std::size_t>(t) * k_pad;
      std::int32_t sum[i8_panel_rows] = {};
      for (int g = 0; g < k_pad / 4; ++g)
        for (int r = 0; r < i8_panel_rows; ++r)
          for (int j = 0; j < 4; ++j) sum[r] += (xt[4 * g + j] - 128) * panel[g * 4 * i8_panel_rows + 4 * r + j];
      float* ot = out + static_cast<std::size_t>(t) * n_out + o0;
      for (int r = 0; r < n_rows; ++r) ot[r] = static_cast<float>(sum[r]) * (w.scales[o0 + r] * x_scales[t]);
    }
  }
}

float sum_squares_scalar(const float* x, int n) { return dot_scalar<float>(x, x, n); }

void scale_mul_scalar(float* out, const float* x, const float* weight, float scale, int n) {
  for (int i = 0; i < n; ++i) out[i] = weight[i] * (scale * x[i]);
}

template <class X>
void axpy_scalar(float* y, float a, const X* x, int n) {
  for (int i = 0; i < n; ++i) y[i] += a * as_f32(x[i]);
}

void attend_group_scalar(float* acc, float* row_max, float* row_sum, const float* q, const kv_group& g, int j0, int n,
                         int head_size, float scale, float* scores) {
  switch (g.type) {
    case dtype::f16:
      return attend_group_generic<std::uint16_t, dot_scalar<std::uint16_t>, axpy_scalar<std::uint16_t>>(
          acc, row_max, row_sum, q, g, j0, n, head_size, scale, scores);
    case dtype::i8:
      return attend_group_generic<std::int8_t, dot_scalar<std::int8_t>, axpy_scalar<std::int8_t>>(
          acc, row_max, row_sum, q, g, j0, n, head_size, scale, scores);
    case dtype::f8_e4m3:
      return attend_group_generic<fp8_e4m3, dot_scalar<fp8_e4m3>, axpy_scalar<fp8_e4m3>>(
          acc, row_max, row_sum, q, g, j0, n, head_size, scale, scores);
    case dtype::f8_e5m2:
      return attend_group_generic<fp8_e5m2, dot_scalar<fp8_e5m2>, axpy_scalar<fp8_e5m2>>(
          acc, row_max, row_sum, q, g, j0, n, head_size, scale, scores);
    default:
      return attend_group_generic<float, dot_scalar<float>, axpy_scalar<float>>(acc, row_max, row_sum, q, g, j0, n,
                                                                               head_size, scale, scores);
  }
}

void f32_to_f16_row_scalar(std::uint16_t* out, const float* x, int n) {
  for (int i = 0; i < n; ++i) out[i] = f32_to_f16(x[i]);
}

void swiglu_scalar(float* gate, const float* up, int n) {
  for (int i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g * (1.0f / (1.0f + std::exp(-g))) * up[i];
  }
}

}  // namespace

namespace detail {

// Two passes as torch's LayerNorm: the mean, then the mean square deviation from it (no E[x^2] -
// mean^2 cancellation).
void layernorm_scalar(float* out, const float* x, const float* weight, const float* bias, int n, float eps) {
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += x[i];
  const float mean = sum / n;
  float ss = 0.0f;
  for (int i = 0; i < n; ++i) ss += (x[i] - mean) * (x[i] - mean);
  const float rstd = 1.0f / std::sqrt(ss / n + eps);
  for (int i = 0; i < n; ++i) out[i] = (x[i] - mean) * rstd * weight[i] + bias[i];
}

void gelu_tanh_scalar(float* x, int n) {
  const float sqrt_2_over_pi = 0.7978845608028654f;
  for (int i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::tanh(sqrt_2_over_pi * (v + 0.044715f * v * v * v)));
  }
}

}  // namespace detail

extern const kernel_table kernel_table_scalar = {
    isa::scalar, matmul_rows_scalar, matmul_rows_16_scalar<bf16_to_f32>, matmul_rows_16_scalar<f16_to_f32>, matmul_i8_scalar,
    reference::quantize_token_u8,
    sum_squares_scalar, scale_mul_scalar, axpy_scalar<float>, swiglu_scalar,
    attend_group_scalar, attend_group_rows_each<attend_group_scalar>,
    attend_heads_each<attend_group_scalar>, f32_to_f16_row_scalar,
    detail::layernorm_scalar, detail::gelu_tanh_scalar, false, detail::quantize_activations,
    detail::matmul_blocks_scalar,
};

}  // namespace pagedserve::kernels
