// Per-row symmetric int8 quantization (see quantize.hpp), its scalar dequantization, and the packing
// into the int8 kernels' panel layout.
#include "model/quantize.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>

#include "pagedserve/check.hpp"

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

namespace {

// An all-zero matrix of the padded sizes; rows are then filled in place.
i8_matrix i8_matrix_zeros(int rows, int cols) {
  // The kernels sum 4 u8 x s8 products per step into int32; 255 * 127 * cols must not overflow it.
  ps_check(cols <= 65536, "int8 matmul: more than 65536 input columns");
  i8_matrix m;
  m.packed.assign(i8_packed_size(rows, cols), 0);
  m.scales.assign(i8_padded_rows(rows), 0.0f);
  m.row_sums.assign(i8_padded_rows(rows), 0);
  m.rows = rows;
  m.cols = cols;
  return m;
}

// Stores row o (q[cols], its scale) into m.
void i8_matrix_set_row(i8_matrix& m, int o, const std::int8_t* q, float scale) {
  std::int32_t sum = 0;
  for (int i = 0; i < m.cols; ++i) {
    m.packed[i8_index(m.cols, o, i)] = q[i];
    sum += q[i];
  }
  m.scales[o] = scale;
  m.row_sums[o] = sum;
}

}  // namespace

i8_matrix i8_matrix_pack(const std::int8_t* q, const float* scales, int rows, int cols) {
  i8_matrix m = i8_matrix_zeros(rows, cols);
  for (int o = 0; o < rows; ++o) i8_matrix_set_row(m, o, q + static_cast<std::size_t>(o) * cols, scales[o]);
  return m;
}

i8_matrix quantize_matrix_i8(const weight& w) {
  i8_matrix m = i8_matrix_zeros(w.rows, w.cols);
  const std::size_t cols = static_cast<std::size_t>(w.cols);
  tbb::parallel_for(0, w.rows, [&](int r) {
    std::vector<float> row(cols);
    std::vector<std::int8_t> q(cols);
    weight_row_to_f32(row.data(), w, r);
    i8_matrix_set_row(m, r, q.data(), quantize_row_i8(q.data(), row.data(), w.cols));
  });
  return m;
}

}  // namespace pagedserve
