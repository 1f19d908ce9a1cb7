// Per-row symmetric int8 quantization (see quantize.hpp) and its scalar dequantization.
#include "pagedserve/quantize.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace pagedserve {

float quantize_row_i8(std::int8_t* q, const float* x, int n) {
  float max_abs = 0.0f;
  for (int i = 0; i < n; ++i) max_abs = std::max(max_abs, std::abs(x[i]));
  if (max_abs == 0.0f) {
    std::fill(q, q + n, std::int8_t{0});
    return 0.0f;
  }
  const float scale = max_abs / 127.0f;
  for (int i = 0; i < n; ++i) {
    // x / scale can land a rounding step above 127 for the largest element: clamp.
    const float r = std::round(x[i] / scale);
    q[i] = static_cast<std::int8_t>(std::clamp(r, -127.0f, 127.0f));
  }
  return scale;
}

void dequantize_row_i8(float* out, const std::int8_t* q, float scale, int n) {
  for (int i = 0; i < n; ++i) out[i] = scale * static_cast<float>(q[i]);
}

weight quantize_matrix_i8(std::int8_t* q, float* scales, const weight& w) {
  const std::size_t cols = static_cast<std::size_t>(w.cols);
  tbb::parallel_for(0, w.rows, [&](int r) {
    std::vector<float> row(cols);
    weight_row_to_f32(row.data(), w, r);
    scales[r] = quantize_row_i8(q + r * cols, row.data(), w.cols);
  });
  return weight{q, dtype::i8, w.rows, w.cols, scales};
}

}  // namespace pagedserve
