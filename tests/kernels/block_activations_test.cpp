// Every table's quantize_activations writes the scalar table's bytes (the activations are the same bits
// everywhere, block_activations.cpp): random rows at many magnitudes (fp16-subnormal scales included),
// zero blocks, products that land exactly on .5 (round half to even), and q8_K's sign choice when +a
// and -a tie for the largest magnitude.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "pagedserve/kernels.hpp"
#include "pagedserve/weight.hpp"

namespace pagedserve::kernels {
namespace {

// One weight type per activation format: q8_0, q8_1, q8_K.
constexpr dtype format_types[] = {dtype::q4_0, dtype::q4_1, dtype::q4_k};

// Rows of n = 512 activations (two q8_K blocks, sixteen of 32) exercising the cases above.
std::vector<std::vector<float>> test_rows(std::mt19937& rng) {
  constexpr int n = 512;
  std::vector<std::vector<float>> rows;
  for (float scale : {1e-9f, 1e-6f, 3e-3f, 1.0f, 37.0f, 6e4f}) {
    for (int i = 0; i < 4; ++i) {
      rows.push_back(random_vector(n, rng, -scale, scale));
      if (i == 1)  // a zero block of 32 and the zero first half of a q8_K block
        std::fill(rows.back().begin(), rows.back().begin() + 128, 0.0f);
    }
  }
  // Largest magnitude 127 in every block: the scale is 1 and each half-integer is an exact tie.
  std::vector<float> ties(n);
  std::uniform_int_distribution<int> half_steps(-253, 253);
  for (int i = 0; i < n; ++i) ties[i] = i % 32 == 5 ? (i % 64 == 5 ? 127.0f : -127.0f) : half_steps(rng) * 0.5f;
  rows.push_back(ties);
  // q8_K: -a before +a (the first one sets the sign), then +a before -a.
  std::vector<float> sign_ties = random_vector(n, rng);
  sign_ties[7] = -2.0f, sign_ties[200] = 2.0f, sign_ties[256 + 3] = 2.0f, sign_ties[256 + 90] = -2.0f;
  rows.push_back(sign_ties);
  rows.push_back(std::vector<float>(n, 0.0f));
  return rows;
}

class block_activations_test : public testing::TestWithParam<const kernel_table*> {};

TEST_P(block_activations_test, same_bytes_as_scalar_table) {
  const kernel_table& kt = *GetParam();
  const kernel_table& scalar = *kernel_table_select("scalar");
  std::mt19937 rng(18);
  for (const std::vector<float>& x : test_rows(rng)) {
    const int n = static_cast<int>(x.size());
    for (dtype t : format_types) {
      const std::size_t bytes = activation_row_bytes(t, n);
      std::vector<std::byte> got(bytes, std::byte{0x5a}), want(bytes, std::byte{0xa5});
      kt.quantize_activations(got.data(), x.data(), t, n);
      scalar.quantize_activations(want.data(), x.data(), t, n);
      // Byte by byte except struct padding: compare the blocks' fields.
      if (t == dtype::q4_k) {
        const auto* g = reinterpret_cast<const act_block256*>(got.data());
        const auto* w = reinterpret_cast<const act_block256*>(want.data());
        for (int b = 0; b < n / 256; ++b) {
          EXPECT_EQ(std::bit_cast<std::uint32_t>(g[b].d), std::bit_cast<std::uint32_t>(w[b].d)) << "block " << b;
          EXPECT_EQ(std::memcmp(g[b].qs, w[b].qs, sizeof w[b].qs), 0) << "block " << b;
          EXPECT_EQ(std::memcmp(g[b].bsums, w[b].bsums, sizeof w[b].bsums), 0) << "block " << b;
        }
      } else {
        const auto* g = reinterpret_cast<const act_block32*>(got.data());
        const auto* w = reinterpret_cast<const act_block32*>(want.data());
        for (int b = 0; b < n / 32; ++b) {
          EXPECT_EQ(std::bit_cast<std::uint32_t>(g[b].d), std::bit_cast<std::uint32_t>(w[b].d)) << "block " << b;
          EXPECT_EQ(std::bit_cast<std::uint32_t>(g[b].s), std::bit_cast<std::uint32_t>(w[b].s)) << "block " << b;
          EXPECT_EQ(std::memcmp(g[b].qs, w[b].qs, sizeof w[b].qs), 0) << "block " << b;
        }
      }
      if (HasFailure()) return;  // one row's report is enough
    }
  }
}

INSTANTIATE_TEST_SUITE_P(all_isas, block_activations_test, testing::ValuesIn(supported_tables()),
                         [](const auto& info) { return std::string(isa_name(info.param->which)); });

}  // namespace
}  // namespace pagedserve::kernels
