// Per-row symmetric int8 quantization (quantize.hpp): range, scale, round-trip error bound, and the
// i8 weight view's element access and row lookup (token embeddings read rows through it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "model/quantize.hpp"
#include "pagedserve/weight.hpp"

namespace pagedserve {
namespace {

TEST(quantize, row_round_trip_error_is_at_most_half_a_step) {
  std::mt19937 rng(5);
  for (int n : {1, 2, 31, 768}) {
    std::normal_distribution<float> dist(0.0f, 0.02f);
    std::vector<float> x(n), back(n);
    for (float& v : x) v = dist(rng);
    std::vector<std::int8_t> q(n);
    const float scale = quantize_row_i8(q.data(), x.data(), n);
    float max_abs = 0.0f;
    for (float v : x) max_abs = std::max(max_abs, std::abs(v));
    EXPECT_FLOAT_EQ(scale, max_abs / 127.0f);
    dequantize_row_i8(back.data(), q.data(), scale, n);
    bool saw_extreme = false;
    for (int i = 0; i < n; ++i) {
      EXPECT_GE(q[i], -127);
      EXPECT_LE(q[i], 127);
      saw_extreme |= std::abs(q[i]) == 127;
      // Half a quantization step, plus the fp32 rounding of x / scale and of scale * q.
      EXPECT_LE(std::abs(back[i] - x[i]), scale * 0.5f * (1.0f + 1e-5f) + 1e-7f * std::abs(x[i])) << i;
    }
    EXPECT_TRUE(saw_extreme) << "the largest |x| maps to +-127";
  }
}

TEST(quantize, exact_multiples_survive_and_zero_rows_get_zero_scale) {
  const std::vector<float> x = {0.0f, 1.0f, -2.0f, 127.0f, -127.0f, 64.0f};
  std::vector<std::int8_t> q(x.size());
  EXPECT_EQ(quantize_row_i8(q.data(), x.data(), static_cast<int>(x.size())), 1.0f);
  EXPECT_EQ(q, (std::vector<std::int8_t>{0, 1, -2, 127, -127, 64}));
  // Halfway cases round away from zero.
  const std::vector<float> h = {254.0f, 1.0f, -3.0f, 5.0f};  // scale 2: 127, 0.5, -1.5, 2.5
  std::vector<std::int8_t> qh(h.size());
  EXPECT_EQ(quantize_row_i8(qh.data(), h.data(), 4), 2.0f);
  EXPECT_EQ(qh, (std::vector<std::int8_t>{127, 1, -2, 3}));
  const std::vector<float> z(5, 0.0f);
  std::vector<std::int8_t> qz(5, 9);
  EXPECT_EQ(quantize_row_i8(qz.data(), z.data(), 5), 0.0f);
  EXPECT_EQ(qz, std::vector<std::int8_t>(5, 0));
}

TEST(quantize, matrix_scales_each_row_alone_and_the_view_dequantizes) {
  // Row 1 is 1000x row 0: per-row scales keep row 0's precision.
  const int rows = 3, cols = 4;
  const std::vector<float> w = {0.001f, -0.002f, 0.0005f, 0.0f, 1.0f, -2.0f, 0.5f, 0.25f, 0.0f, 0.0f, 0.0f, 0.0f};
  const std::vector<std::uint16_t> w16 = [&] {
    std::vector<std::uint16_t> v;
    for (float f : w) v.push_back(f32_to_bf16(f));
    return v;
  }();
  for (const weight src : {weight_f32(w.data(), rows, cols), weight{w16.data(), dtype::bf16, rows, cols}}) {
    const i8_matrix m = quantize_matrix_i8(src);
    const weight v = m.view();
    const std::vector<float>& scales = m.scales;
    ASSERT_EQ(v.type, dtype::i8);
    EXPECT_EQ(v.scales, scales.data());
    // Packed panels of 16 rows x 4 columns, then 16 padded scales and row sums.
    EXPECT_EQ(v.n_bytes(), 16 * 4 + 16 * (sizeof(float) + sizeof(std::int32_t)));
    EXPECT_EQ(scales[2], 0.0f);
    for (int r = 0; r < rows; ++r) {
      int sum = 0;
      for (int c = 0; c < cols; ++c) sum += m.packed[i8_index(cols, r, c)];
      EXPECT_EQ(m.row_sums[r], sum) << "row " << r;
    }
    EXPECT_EQ(m.packed[i8_index(cols, 1, 1)], -127) << "row 1's largest";
    std::vector<float> row(cols);
    for (int r = 0; r < rows; ++r) {
      weight_row_to_f32(row.data(), v, r);
      for (int c = 0; c < cols; ++c) {
        const std::size_t i = static_cast<std::size_t>(r) * cols + c;
        EXPECT_EQ(row[c], weight_at(v, i));
        EXPECT_LE(std::abs(row[c] - weight_at(src, i)), scales[r] * 0.5f * 1.0001f) << r << "," << c;
      }
    }
    EXPECT_NEAR(weight_at(v, 0), 0.001f, 0.002f / 254 * 1.001f);  // row 0's own step, not row 1's
  }
}

}  // namespace
}  // namespace pagedserve
