#pragma once
// Weight-only int8 quantization with one scale per output row (per channel, symmetric), the format
// of dtype::i8: scale = max|w_row| / 127 and q = round(w / scale), so w ~= scale * q with an error of
// at most scale / 2 per element. Per-row scales keep a row with small weights from losing its
// precision to another row's outliers, and a symmetric range needs no zero point, so the matmul is
// scale[o] * sum_i x[i] * q[o, i] and the scale leaves the inner loop.
#include <cstdint>

#include "pagedserve/weight.hpp"

namespace pagedserve {

// q[n] from x[n]; returns the row's scale (0 for an all-zero row, whose q are then all 0).
// Halfway cases round away from zero; q is always in [-127, 127].
float quantize_row_i8(std::int8_t* q, const float* x, int n);

// out[n] = scale * q[n]: the value an i8 weight stands for (the scalar reference of dequantization).
void dequantize_row_i8(float* out, const std::int8_t* q, float scale, int n);

// Quantizes every row of w (any dtype) into q[w.rows * w.cols] and scales[w.rows], in parallel over
// rows; returns the i8 view of them.
weight quantize_matrix_i8(std::int8_t* q, float* scales, const weight& w);

}  // namespace pagedserve
