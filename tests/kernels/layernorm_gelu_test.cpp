// GPT-2's LayerNorm and tanh-approximated GELU on every kernel table this CPU supports: against the
// scalar reference on odd shapes, on extreme inputs, fused with the residual add, and batch invariant.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int dims[] = {1, 7, 17, 64, 100, 768, 172};
constexpr int row_counts[] = {1, 3, 5, 33};

class layernorm_gelu_test : public testing::TestWithParam<const kernel_table*> {
 protected:
  const kernel_table& kt() const { return *GetParam(); }
  std::mt19937 rng_{4321};
};

// Inputs off-centre (mean around 2) so the mean removal matters, as in a residual stream.
TEST_P(layernorm_gelu_test, layernorm_matches_reference) {
  for (int dim : dims)
    for (int n_rows : row_counts) {
      SCOPED_TRACE("dim=" + std::to_string(dim) + " n_rows=" + std::to_string(n_rows));
      const auto x = random_vector(static_cast<std::size_t>(n_rows) * dim, rng_, -1.0f, 5.0f);
      const auto weight = random_vector(dim, rng_, 0.5f, 1.5f), bias = random_vector(dim, rng_, -0.5f, 0.5f);
      std::vector<float> got(x.size()), want(x.size());
      ops::layernorm(kt(), got.data(), x.data(), weight.data(), bias.data(), n_rows, dim, 1e-5f);
      reference::layernorm(want.data(), x.data(), weight.data(), bias.data(), n_rows, dim, 1e-5f);
      expect_close(got, want, dim);
    }
}

// LayerNorm in double: the fp32 kernel is within float rounding of the exact normalisation, and a
// constant row (variance 0) gives the bias, not NaN.
TEST_P(layernorm_gelu_test, layernorm_is_the_exact_normalisation) {
  const int dim = 100;
  const auto x = random_vector(dim, rng_, 10.0f, 12.0f);  // a large mean, small spread
  const auto weight = random_vector(dim, rng_, 0.5f, 1.5f), bias = random_vector(dim, rng_, -0.5f, 0.5f);
  std::vector<float> got(dim);
  kt().layernorm(got.data(), x.data(), weight.data(), bias.data(), dim, 1e-5f);
  double mean = 0.0, var = 0.0;
  for (float v : x) mean += v;
  mean /= dim;
  for (float v : x) var += (v - mean) * (v - mean);
  var /= dim;
  for (int i = 0; i < dim; ++i)
    EXPECT_NEAR(got[i], (x[i] - mean) / std::sqrt(var + 1e-5) * weight[i] + bias[i], 2e-5) << i;
  const std::vector<float> flat(dim, 3.25f);
  kt().layernorm(got.data(), flat.data(), weight.data(), bias.data(), dim, 1e-5f);
  for (int i = 0; i < dim; ++i) EXPECT_EQ(got[i], bias[i]) << i;
}

// The fused residual add + LayerNorm is the add followed by the norm, to the bit.
TEST_P(layernorm_gelu_test, add_layernorm_equals_add_then_layernorm) {
  for (int dim : dims)
    for (int n_tokens : {1, 5, 64}) {
      SCOPED_TRACE("dim=" + std::to_string(dim) + " n_tokens=" + std::to_string(n_tokens));
      const auto x0 = random_vector(static_cast<std::size_t>(n_tokens) * dim, rng_, -3.0f, 3.0f);
      const auto y = random_vector(x0.size(), rng_, -3.0f, 3.0f);
      const auto weight = random_vector(dim, rng_, 0.5f, 1.5f), bias = random_vector(dim, rng_, -0.5f, 0.5f);
      std::vector<float> x = x0, out(x0.size()), want_x = x0, want(x0.size());
      ops::add_layernorm(kt(), out.data(), x.data(), y.data(), weight.data(), bias.data(), n_tokens, dim, 1e-5f);
      ops::add(want_x.data(), y.data(), n_tokens, dim);
      ops::layernorm(kt(), want.data(), want_x.data(), weight.data(), bias.data(), n_tokens, dim, 1e-5f);
      ASSERT_EQ(x, want_x);
      ASSERT_EQ(0, std::memcmp(out.data(), want.data(), out.size() * sizeof(float)));
    }
}

// Elementwise: |got - want| <= 1e-6 (|x| + 1), i.e. about 10 ulp of x's scale; the tanh through exp
// loses only absolute precision near tanh = +-1, where GELU is ~0 or ~x.
TEST_P(layernorm_gelu_test, gelu_tanh_matches_reference) {
  for (int dim : dims)
    for (int n_tokens : row_counts) {
      SCOPED_TRACE("dim=" + std::to_string(dim) + " n_tokens=" + std::to_string(n_tokens));
      const auto x = random_vector(static_cast<std::size_t>(n_tokens) * dim, rng_, -12.0f, 12.0f);
      std::vector<float> got = x, want = x;
      ops::gelu_tanh(kt(), got.data(), n_tokens, dim);
      reference::gelu_tanh(want.data(), static_cast<int>(want.size()));
      for (std::size_t i = 0; i < x.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-6f * (std::abs(x[i]) + 1.0f)) << "x = " << x[i];
    }
}

TEST_P(layernorm_gelu_test, gelu_tanh_extreme_inputs) {
  const std::vector<float> x = {-1e30f, -1000.0f, -60.0f, -10.0f, -3.0f, -1e-20f, 0.0f,  1e-20f,
                                0.5f,   3.0f,     10.0f,  60.0f,  1000.0f, 1e30f};
  std::vector<float> got = x, want = x;
  kt().gelu_tanh(got.data(), static_cast<int>(got.size()));
  reference::gelu_tanh(want.data(), static_cast<int>(want.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    SCOPED_TRACE("x=" + std::to_string(x[i]));
    if (std::abs(x[i]) >= 1e30f) {  // x^3 overflows: torch gives NaN or +-inf too; just no crash
      continue;
    }
    ASSERT_TRUE(std::isfinite(got[i]));
    EXPECT_NEAR(got[i], want[i], 1e-6f * (std::abs(x[i]) + 1.0f));
  }
  EXPECT_EQ(got[6], 0.0f);
  EXPECT_EQ(got[11], 60.0f);  // tanh is exactly 1 this far out
  EXPECT_EQ(got[2], 0.0f);    // and exactly -1: 0.5 x (1 - 1)
}

// A row's LayerNorm and GELU give the same bits whichever rows share the call (batch invariance).
TEST_P(layernorm_gelu_test, rows_are_batch_invariant) {
  const int dim = 172;
  for (int n_rows : {1, 7, 64, 300}) {  // 300 rows: past the serial threshold, so TBB splits them
    const auto x = random_vector(static_cast<std::size_t>(n_rows) * dim, rng_, -4.0f, 4.0f);
    const auto weight = random_vector(dim, rng_, 0.5f, 1.5f), bias = random_vector(dim, rng_, -0.5f, 0.5f);
    std::vector<float> all(x.size()), one(dim);
    ops::layernorm(kt(), all.data(), x.data(), weight.data(), bias.data(), n_rows, dim, 1e-5f);
    std::vector<float> g_all = x;
    ops::gelu_tanh(kt(), g_all.data(), n_rows, dim);
    for (int r = 0; r < n_rows; r += 3) {
      const float* xr = x.data() + static_cast<std::size_t>(r) * dim;
      ops::layernorm(kt(), one.data(), xr, weight.data(), bias.data(), 1, dim, 1e-5f);
      ASSERT_EQ(0, std::memcmp(one.data(), all.data() + static_cast<std::size_t>(r) * dim, dim * sizeof(float))) << r;
      std::vector<float> g_one(xr, xr + dim);
      ops::gelu_tanh(kt(), g_one.data(), 1, dim);
      ASSERT_EQ(0, std::memcmp(g_one.data(), g_all.data() + static_cast<std::size_t>(r) * dim, dim * sizeof(float))) << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(all_isas, layernorm_gelu_test, testing::ValuesIn(supported_tables()),
                         [](const testing::TestParamInfo<const kernel_table*>& info) {
                           return std::string(isa_name(info.param->which));
                         });

}  // namespace
}  // namespace pagedserve::kernels
