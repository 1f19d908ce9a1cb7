#pragma once
// int8 weight quantization with one scale per output row (per channel, symmetric), the format of
// dtype::i8: scale = max|w_row| / 127 and q = round(w / scale), so w ~= scale * q with an error of
// at most scale / 2 per element. Per-row scales keep a row with small weights from losing its
// precision to another row's outliers, and a symmetric range needs no zero point, so the matmul is
// scale[o] * sum_i x[i] * q[o, i] and the scale leaves the inner loop. The matrix is packed at load
// into the int8 kernels' panel layout (weight.hpp, i8_index) with each row's sum of q beside it.
#include <cstdint>
#include <vector>

#include "pagedserve/weight.hpp"

namespace pagedserve {

// q[n] from x[n]; returns the row's scale (0 for an all-zero row, whose q are then all 0).
// Halfway cases round away from zero; q is always in [-127, 127].
float quantize_row_i8(std::int8_t* q, const float* x, int n);

// out[n] = scale * q[n]: the value an i8 weight stands for (the scalar reference of dequantization).
void dequantize_row_i8(float* out, const std::int8_t* q, float scale, int n);

// An i8 matrix and the buffers behind its view: packed panels, row scales and row sums, each padded
// as weight.hpp describes.
struct i8_matrix {
  std::vector<std::int8_t> packed;    // [i8_packed_size(rows, cols)]
  std::vector<float> scales;          // [i8_padded_rows(rows)]
  std::vector<std::int32_t> row_sums; // [i8_padded_rows(rows)]
  int rows = 0;
  int cols = 0;

  weight view() const { return weight{packed.data(), dtype::i8, rows, cols, scales.data(), row_sums.data()}; }
};

// Packs row-major q[rows, cols] and scales[rows] into the i8 layout, summing each row.
i8_matrix i8_matrix_pack(const std::int8_t* q, const float* scales, int rows, int cols);

// Quantizes every row of w (any dtype) and packs the result, in parallel over rows.
i8_matrix quantize_matrix_i8(const weight& w);

}  // namespace pagedserve
