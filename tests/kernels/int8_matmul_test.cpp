// The int8 matmul (dtype::i8 weights packed in panels, activations quantized per token) on every
// kernel table this CPU runs: the activation quantizer and the matmul bit-for-bit against the scalar
// reference (so every table gives the same bits as every other) on odd shapes and extreme values,
// bit-exact batch invariance, and the error against the fp32 matmul over unquantized weights.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "pagedserve/kernels.hpp"
#include "model/quantize.hpp"
#include "pagedserve/weight.hpp"

namespace pagedserve::kernels {
namespace {

// Random q in [-127, 127] with row scales of very different magnitudes, so a scale mixed up between
// rows would show.
i8_matrix random_i8_matrix(int rows, int cols, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(-127, 127);
  std::vector<std::int8_t> q(static_cast<std::size_t>(rows) * cols);
  for (std::int8_t& v : q) v = static_cast<std::int8_t>(dist(rng));
  std::vector<float> scales(rows);
  for (int r = 0; r < rows; ++r) scales[r] = 1e-4f * static_cast<float>(1 + r % 7);
  return i8_matrix_pack(q.data(), scales.data(), rows, cols);
}

i8_matrix constant_i8_matrix(int rows, int cols, std::int8_t value, float scale) {
  const std::vector<std::int8_t> q(static_cast<std::size_t>(rows) * cols, value);
  const std::vector<float> scales(rows, scale);
  return i8_matrix_pack(q.data(), scales.data(), rows, cols);
}

// ops::matmul on this table and reference::matmul must agree to the bit.
void expect_same_bits_as_reference(const kernel_table& kt, const std::vector<float>& x, const weight& w, int n_tokens) {
  std::vector<float> got(static_cast<std::size_t>(n_tokens) * w.rows, -1.0f), want(got.size(), -2.0f);
  ops::matmul(kt, got.data(), x.data(), w, n_tokens);
  reference::matmul(want.data(), x.data(), w, n_tokens);
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
        << "t=" << i / w.rows << " o=" << i % w.rows << ": " << got[i] << " vs " << want[i];
}

class int8_matmul_test : public testing::TestWithParam<const kernel_table*> {
 protected:
  const kernel_table& kt() const { return *GetParam(); }
  std::mt19937 rng_{77};
};

TEST_P(int8_matmul_test, quantize_token_matches_reference_bit_for_bit) {
  for (int n : {1, 3, 4, 7, 8, 15, 16, 17, 33, 100, 768, 2049}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const int n_pad = i8_padded_cols(n);
    const std::vector<float> x = random_vector(n, rng_, -3.0f, 3.0f);
    // Exact halves: with max|x| = 127 the multiplier is 1, so 2.5 and -3.5 are ties (to even: 2, -4).
    const std::vector<float> ties = [n] {
      std::vector<float> v(n, 127.0f);
      for (int i = 1; i < n; ++i) v[i] = (i % 2 ? 1.0f : -1.0f) * (static_cast<float>(i % 50) + 0.5f);
      return v;
    }();
    const std::vector<float> zero(n, 0.0f), tiny(n, 1e-41f);  // tiny: 127 / max overflows to inf
    for (const std::vector<float>* v : {&x, &ties, &zero, &tiny}) {
      std::vector<std::uint8_t> got(n_pad, 7), want(n_pad, 9);
      const float s_got = kt().quantize_token_u8(got.data(), v->data(), n, n_pad);
      const float s_want = reference::quantize_token_u8(want.data(), v->data(), n, n_pad);
      ASSERT_EQ(std::bit_cast<std::uint32_t>(s_got), std::bit_cast<std::uint32_t>(s_want));
      ASSERT_EQ(got, want);
    }
    std::vector<std::uint8_t> q(n_pad);
    EXPECT_EQ(reference::quantize_token_u8(q.data(), ties.data(), n, n_pad), 1.0f);
    if (n > 2) { EXPECT_EQ(q[1], 128 + 2) << "1.5 rounds to even"; }
    if (n > 3) { EXPECT_EQ(q[2], 128 - 2) << "-2.5 rounds to even"; }
    EXPECT_EQ(reference::quantize_token_u8(q.data(), zero.data(), n, n_pad), 0.0f);
    EXPECT_EQ(q, std::vector<std::uint8_t>(n_pad, 128));
  }
}

TEST_P(int8_matmul_test, matches_reference_bit_for_bit_on_odd_shapes) {
  for (int n_in : {1, 3, 4, 5, 7, 16, 17, 63, 64, 65, 100, 172, 768})
    for (int n_out : {1, 5, 16, 17, 19, 33, 70}) {
      const i8_matrix w = random_i8_matrix(n_out, n_in, rng_);
      // Every token count 1..33 on a few shapes, a spread of them on the rest.
      const bool all_counts = n_in == 17 || n_in == 172;
      for (int n_tokens = 1; n_tokens <= 33; ++n_tokens) {
        if (!all_counts && n_tokens != 1 && n_tokens != 2 && n_tokens != 5 && n_tokens != 6 && n_tokens != 7 &&
            n_tokens != 13 && n_tokens != 33)
          continue;
        SCOPED_TRACE("n_in=" + std::to_string(n_in) + " n_out=" + std::to_string(n_out) +
                     " n_tokens=" + std::to_string(n_tokens));
        expect_same_bits_as_reference(kt(), random_vector(static_cast<std::size_t>(n_tokens) * n_in, rng_), w.view(),
                                      n_tokens);
      }
    }
}

// The corners of the integer range: every weight +-127 against every activation at +-127 (the
// largest sums, 255 * 127 per u8 x s8 product), up to the 65536 columns load allows; one huge
// outlier that flushes the rest of its token to 0; zero weight rows and zero tokens.
TEST_P(int8_matmul_test, extreme_values_are_exact) {
  for (int n_in : {4, 4099, 65536})
    for (std::int8_t wv : {std::int8_t{127}, std::int8_t{-127}}) {
      SCOPED_TRACE("n_in=" + std::to_string(n_in) + " w=" + std::to_string(wv));
      const i8_matrix w = constant_i8_matrix(19, n_in, wv, 0.5f);
      std::vector<float> x(static_cast<std::size_t>(2) * n_in, 2.0f);  // token 0: all +max (u8 255)
      std::fill(x.begin() + n_in, x.end(), -2.0f);                     // token 1: all -max (u8 1)
      expect_same_bits_as_reference(kt(), x, w.view(), 2);
      std::vector<float> out(static_cast<std::size_t>(2) * 19);
      ops::matmul(kt(), out.data(), x.data(), w.view(), 2);
      const double sum = 127.0 * wv * n_in;  // exact in int32 (and double), rounded to float as the kernel does
      EXPECT_EQ(out[0], static_cast<float>(sum) * (0.5f * (2.0f / 127.0f)));
      EXPECT_EQ(out[19], -static_cast<float>(sum) * (0.5f * (2.0f / 127.0f)));
    }
  const int n_in = 300, n_out = 37;
  i8_matrix w = random_i8_matrix(n_out, n_in, rng_);
  std::vector<std::int8_t> q(static_cast<std::size_t>(n_out) * n_in);
  std::vector<float> scales(n_out);
  for (int o = 0; o < n_out; ++o) {
    scales[o] = w.scales[o];
    for (int i = 0; i < n_in; ++i)
      q[static_cast<std::size_t>(o) * n_in + i] = o % 5 == 3 ? 0 : w.packed[i8_index(n_in, o, i)];
  }
  w = i8_matrix_pack(q.data(), scales.data(), n_out, n_in);  // rows 3, 8, 13, ... all zero
  std::vector<float> x = random_vector(static_cast<std::size_t>(3) * n_in, rng_);
  x[17] = 1e6f;                                      // token 0: one outlier
  std::fill(x.begin() + n_in, x.begin() + 2 * n_in, 0.0f);  // token 1: zero
  x[2 * n_in + n_in - 1] = -3e38f;                   // token 2: an outlier near FLT_MAX, in the last column
  expect_same_bits_as_reference(kt(), x, w.view(), 3);
  std::vector<float> out(static_cast<std::size_t>(3) * n_out);
  ops::matmul(kt(), out.data(), x.data(), w.view(), 3);
  for (int o = 0; o < n_out; ++o) {
    EXPECT_EQ(out[n_out + o], 0.0f) << "zero token, o=" << o;
    if (o % 5 == 3) { EXPECT_EQ(out[o], 0.0f) << "zero row " << o; }
    // Only the outlier survives quantization: the output is its product alone.
    EXPECT_EQ(out[o], static_cast<float>(127 * q[static_cast<std::size_t>(o) * n_in + 17]) * (w.scales[o] * (1e6f / 127.0f)));
  }
}

TEST_P(int8_matmul_test, is_batch_invariant_for_1_to_33_tokens) {
  constexpr int n_batch = 33, n_out = 45;
  for (int n_in : {17, 172, 768}) {
    SCOPED_TRACE("n_in=" + std::to_string(n_in));
    const auto x = random_vector(static_cast<std::size_t>(n_batch) * n_in, rng_);
    const i8_matrix w = random_i8_matrix(n_out, n_in, rng_);
    std::vector<float> alone(static_cast<std::size_t>(n_batch) * n_out);
    for (int t = 0; t < n_batch; ++t)
      ops::matmul(kt(), alone.data() + static_cast<std::size_t>(t) * n_out, x.data() + static_cast<std::size_t>(t) * n_in,
                  w.view(), 1);
    // Every batch size 1..33 at offsets 0 and 33 - n: each row equals the token computed alone.
    for (int n = 1; n <= n_batch; ++n)
      for (int t0 : {0, n_batch - n}) {
        std::vector<float> batched(static_cast<std::size_t>(n) * n_out);
        ops::matmul(kt(), batched.data(), x.data() + static_cast<std::size_t>(t0) * n_in, w.view(), n);
        ASSERT_EQ(0, std::memcmp(batched.data(), alone.data() + static_cast<std::size_t>(t0) * n_out,
                                 batched.size() * sizeof(float)))
            << "n=" << n << " t0=" << t0;
      }
    // Panels split at odd places through the table give the same bits.
    const int k_pad = i8_padded_cols(n_in);
    std::vector<std::uint8_t> xq(static_cast<std::size_t>(n_batch) * k_pad);
    std::vector<float> x_scales(n_batch);
    for (int t = 0; t < n_batch; ++t)
      x_scales[t] = kt().quantize_token_u8(xq.data() + static_cast<std::size_t>(t) * k_pad,
                                           x.data() + static_cast<std::size_t>(t) * n_in, n_in, k_pad);
    std::vector<float> split(alone.size(), 0.0f);
    const int cuts[] = {0, 1, 2, 3};  // 45 rows: panels 0, 1, 2 (rows 32..44)
    for (std::size_t c = 0; c + 1 < std::size(cuts); ++c)
      kt().matmul_i8(split.data(), xq.data(), x_scales.data(), w.view(), n_batch, cuts[c], cuts[c + 1]);
    ASSERT_EQ(0, std::memcmp(split.data(), alone.data(), alone.size() * sizeof(float)));
  }
}

// A group large enough to be split between threads inside its outputs, whose panel counts (38, 46, 19)
// are not multiples of the register block and span several of the tile loop's L2 blocks (768 columns):
// ranges snapped to whole register blocks and the next block's prefetch still give every row the
// reference's bits, with the static split (up to 16 tokens) and TBB's dynamic one.
TEST_P(int8_matmul_test, large_split_group_matches_reference_bit_for_bit) {
  constexpr int n_in = 768;
  const int rows[] = {16 * 37 + 5, 16 * 46, 16 * 18 + 9};
  i8_matrix w[3];
  for (int j = 0; j < 3; ++j) w[j] = random_i8_matrix(rows[j], n_in, rng_);
  for (int n_tokens : {1, 16, 23}) {
    SCOPED_TRACE("n_tokens=" + std::to_string(n_tokens));
    const auto x = random_vector(static_cast<std::size_t>(n_tokens) * n_in, rng_);
    std::vector<float> got[3];
    ops::matmul_output outs[3];
    for (int j = 0; j < 3; ++j) {
      got[j].assign(static_cast<std::size_t>(n_tokens) * rows[j], -1.0f);
      outs[j] = {got[j].data(), w[j].view()};
    }
    ops::matmul_group(kt(), outs, x.data(), n_tokens);
    for (int j = 0; j < 3; ++j) {
      std::vector<float> want(got[j].size(), -2.0f);
      reference::matmul(want.data(), x.data(), w[j].view(), n_tokens);
      ASSERT_EQ(0, std::memcmp(got[j].data(), want.data(), want.size() * sizeof(float))) << "output " << j;
    }
  }
}

// Against the fp32 matmul over the unquantized weights: with x = sx * qx + ex (|ex| <= sx / 2) and
// w = sw * qw + ew (|ew| <= sw / 2), |x.w - sx sw qx.qw| <= sx / 2 * sum|w| + sw / 2 * sum(|x| + sx / 2).
TEST_P(int8_matmul_test, stays_within_quantization_error_of_fp32_weights) {
  constexpr int n_tokens = 3, n_in = 300, n_out = 40;
  const auto x = random_vector(static_cast<std::size_t>(n_tokens) * n_in, rng_);
  const auto wf = random_vector(static_cast<std::size_t>(n_out) * n_in, rng_, -0.05f, 0.05f);
  const i8_matrix wi8 = quantize_matrix_i8(weight_f32(wf.data(), n_out, n_in));
  std::vector<float> got(static_cast<std::size_t>(n_tokens) * n_out), exact(got.size());
  ops::matmul(kt(), got.data(), x.data(), wi8.view(), n_tokens);
  reference::matmul(exact.data(), x.data(), wf.data(), n_tokens, n_in, n_out);
  for (int t = 0; t < n_tokens; ++t) {
    const float* xt = x.data() + static_cast<std::size_t>(t) * n_in;
    double abs_x = 0.0, max_x = 0.0;
    for (int i = 0; i < n_in; ++i) abs_x += std::abs(xt[i]), max_x = std::max(max_x, static_cast<double>(std::abs(xt[i])));
    const double sx = max_x / 127.0;
    for (int o = 0; o < n_out; ++o) {
      double abs_w = 0.0;
      for (int i = 0; i < n_in; ++i) abs_w += std::abs(wf[static_cast<std::size_t>(o) * n_in + i]);
      const double bound = sx / 2 * abs_w + wi8.scales[o] / 2 * (abs_x + n_in * sx / 2);
      const std::size_t i = static_cast<std::size_t>(t) * n_out + o;
      EXPECT_LE(std::abs(got[i] - exact[i]), bound * 1.001 + 1e-6) << "t=" << t << " o=" << o;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(all_isas, int8_matmul_test, testing::ValuesIn(supported_tables()),
                         [](const testing::TestParamInfo<const kernel_table*>& info) {
                           return std::string(isa_name(info.param->which));
                         });

}  // namespace
}  // namespace pagedserve::kernels
