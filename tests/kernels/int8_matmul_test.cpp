// int8 weight-only matmul (dtype::i8, per-row scales) on every kernel table this CPU runs: against
// the scalar reference on odd shapes, bit-for-bit against the table's own fp32 path over the widened
// int8 values (the promise kernels.hpp makes), and bit-exact batch invariance for 1..32 tokens.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "pagedserve/kernels.hpp"
#include "pagedserve/quantize.hpp"
#include "pagedserve/weight.hpp"

namespace pagedserve::kernels {
namespace {

// A random fp32 matrix quantized per row; `widened` holds q as fp32 (exact) for the fp32 path.
struct i8_matrix {
  std::vector<std::int8_t> q;
  std::vector<float> scales;
  std::vector<float> widened;
  int rows = 0, cols = 0;
  weight view() const { return weight{q.data(), dtype::i8, rows, cols, scales.data()}; }
};

i8_matrix random_i8_matrix(int rows, int cols, std::mt19937& rng) {
  i8_matrix m{std::vector<std::int8_t>(static_cast<std::size_t>(rows) * cols), std::vector<float>(rows), {}, rows, cols};
  // Rows of very different magnitudes, so a scale mixed up between rows would show.
  for (int r = 0; r < rows; ++r) {
    const float mag = 0.01f * static_cast<float>(1 + r % 7);
    const auto row = random_vector(cols, rng, -mag, mag);
    m.scales[r] = quantize_row_i8(m.q.data() + static_cast<std::size_t>(r) * cols, row.data(), cols);
  }
  m.widened.assign(m.q.begin(), m.q.end());
  return m;
}

class int8_matmul_test : public testing::TestWithParam<const kernel_table*> {
 protected:
  const kernel_table& kt() const { return *GetParam(); }
  std::mt19937 rng_{77};
};

TEST_P(int8_matmul_test, matches_reference_and_fp32_path_bit_for_bit) {
  for (int n_in : {1, 7, 16, 17, 63, 100, 172, 768})
    for (int n_tokens : {1, 2, 3, 4, 5, 33})
      for (int n_out : {1, 5, 19, 70}) {
        SCOPED_TRACE("n_in=" + std::to_string(n_in) + " n_tokens=" + std::to_string(n_tokens) +
                     " n_out=" + std::to_string(n_out));
        const auto x = random_vector(static_cast<std::size_t>(n_tokens) * n_in, rng_);
        const i8_matrix w = random_i8_matrix(n_out, n_in, rng_);
        std::vector<float> got(static_cast<std::size_t>(n_tokens) * n_out), want(got.size()), fp32(got.size());
        ops::matmul(kt(), got.data(), x.data(), w.view(), n_tokens);
        reference::matmul(want.data(), x.data(), w.view(), n_tokens);
        if (kt().which == isa::scalar) {  // the scalar table is the reference's arithmetic
          ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
        }
        expect_close(got, want, n_in);
        // Same sums as the fp32 kernel over q, then one multiply by the row's scale.
        ops::matmul(kt(), fp32.data(), x.data(), w.widened.data(), n_tokens, n_in, n_out);
        for (int t = 0; t < n_tokens; ++t)
          for (int o = 0; o < n_out; ++o) {
            const std::size_t i = static_cast<std::size_t>(t) * n_out + o;
            ASSERT_EQ(got[i], w.scales[o] * fp32[i]) << "t=" << t << " o=" << o;
          }
      }
}

TEST_P(int8_matmul_test, is_batch_invariant_for_1_to_32_tokens) {
  constexpr int n_batch = 32, n_out = 45;
  for (int n_in : {17, 172, 768}) {
    SCOPED_TRACE("n_in=" + std::to_string(n_in));
    const auto x = random_vector(static_cast<std::size_t>(n_batch) * n_in, rng_);
    const i8_matrix w = random_i8_matrix(n_out, n_in, rng_);
    std::vector<float> alone(static_cast<std::size_t>(n_batch) * n_out);
    for (int t = 0; t < n_batch; ++t)
      ops::matmul(kt(), alone.data() + static_cast<std::size_t>(t) * n_out, x.data() + static_cast<std::size_t>(t) * n_in,
                  w.view(), 1);
    // Every batch size 1..32 at offsets 0 and 32 - n: each row equals the token computed alone.
    for (int n = 1; n <= n_batch; ++n)
      for (int t0 : {0, n_batch - n}) {
        std::vector<float> batched(static_cast<std::size_t>(n) * n_out);
        ops::matmul(kt(), batched.data(), x.data() + static_cast<std::size_t>(t0) * n_in, w.view(), n);
        ASSERT_EQ(0, std::memcmp(batched.data(), alone.data() + static_cast<std::size_t>(t0) * n_out,
                                 batched.size() * sizeof(float)))
            << "n=" << n << " t0=" << t0;
      }
    // Output rows split at odd places through the table give the same bits.
    std::vector<float> split(alone.size(), 0.0f);
    const int cuts[] = {0, 1, 6, 13, 14, 31, n_out};
    for (std::size_t c = 0; c + 1 < std::size(cuts); ++c)
      kt().matmul_rows_i8(split.data(), x.data(), w.q.data(), w.scales.data(), n_batch, n_in, n_out, cuts[c],
                          cuts[c + 1]);
    ASSERT_EQ(0, std::memcmp(split.data(), alone.data(), alone.size() * sizeof(float)));
  }
}

// The int8 result tracks the fp32 matmul over the unquantized weights within the quantization error:
// |w - scale*q| <= scale/2 per weight, so |error| <= sum_i |x_i| * scale_o / 2 per output.
TEST_P(int8_matmul_test, stays_within_quantization_error_of_fp32_weights) {
  constexpr int n_tokens = 3, n_in = 300, n_out = 40;
  const auto x = random_vector(static_cast<std::size_t>(n_tokens) * n_in, rng_);
  const auto wf = random_vector(static_cast<std::size_t>(n_out) * n_in, rng_, -0.05f, 0.05f);
  std::vector<std::int8_t> q(wf.size());
  std::vector<float> scales(n_out);
  const weight wi8 = quantize_matrix_i8(q.data(), scales.data(), weight_f32(wf.data(), n_out, n_in));
  std::vector<float> got(static_cast<std::size_t>(n_tokens) * n_out), exact(got.size());
  ops::matmul(kt(), got.data(), x.data(), wi8, n_tokens);
  reference::matmul(exact.data(), x.data(), wf.data(), n_tokens, n_in, n_out);
  for (int t = 0; t < n_tokens; ++t) {
    double abs_x = 0.0;
    for (int i = 0; i < n_in; ++i) abs_x += std::abs(x[static_cast<std::size_t>(t) * n_in + i]);
    for (int o = 0; o < n_out; ++o) {
      const std::size_t i = static_cast<std::size_t>(t) * n_out + o;
      EXPECT_LE(std::abs(got[i] - exact[i]), abs_x * scales[o] / 2 * 1.001 + 1e-6) << "t=" << t << " o=" << o;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(all_isas, int8_matmul_test, testing::ValuesIn(supported_tables()),
                         [](const testing::TestParamInfo<const kernel_table*>& info) {
                           return std::string(isa_name(info.param->which));
                         });

}  // namespace
}  // namespace pagedserve::kernels
