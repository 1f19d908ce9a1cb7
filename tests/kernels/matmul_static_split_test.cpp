// matmul_group's static split of decode-sized steps (up to 16 tokens): one share per thread, the calling
// thread's larger by a lead of a few tiles. Whatever the thread count and the lead, every output row is
// written (outputs start as NaN) with the bits one thread gives, for block-quantized and i8 groups whose
// outputs the share bounds cut at odd places.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "model/quantize.hpp"
#include "pagedserve/kernels.hpp"
#include "pagedserve/weight.hpp"
#include "support/panel_matrix.hpp"
#include "support/random_blocks.hpp"

namespace pagedserve::kernels {
namespace {

class matmul_static_split_test : public testing::TestWithParam<const kernel_table*> {
 protected:
  const kernel_table& kt() const { return *GetParam(); }

  // Every output of the group computed in an arena of n_threads, from NaN.
  std::vector<std::vector<float>> run(const std::vector<weight>& ws, const std::vector<float>& x, int n_tokens,
                                      int n_threads) const {
    std::vector<std::vector<float>> out(ws.size());
    std::vector<ops::matmul_output> outputs;
    for (std::size_t j = 0; j < ws.size(); ++j) {
      out[j].assign(static_cast<std::size_t>(n_tokens) * ws[j].rows, NAN);
      outputs.push_back({out[j].data(), ws[j]});
    }
    tbb::task_arena(n_threads).execute([&] { ops::matmul_group(kt(), outputs, x.data(), n_tokens); });
    return out;
  }

  void expect_same_bits_for_any_thread_count(const std::vector<weight>& ws, int n_in) {
    for (int n_tokens : {1, 2, 16}) {
      SCOPED_TRACE("n_tokens=" + std::to_string(n_tokens));
      const auto x = random_vector(static_cast<std::size_t>(n_tokens) * n_in, rng_);
      const auto one_thread = run(ws, x, n_tokens, 1);
      for (const auto& o : one_thread)
        for (float v : o) ASSERT_FALSE(std::isnan(v));
      for (int n_threads : {2, 3, 5}) {
        SCOPED_TRACE("n_threads=" + std::to_string(n_threads));
        EXPECT_EQ(run(ws, x, n_tokens, n_threads), one_thread);
      }
    }
  }

  std::mt19937 rng_{31};
};

// q4_0 rows of 768 columns (432 bytes, 6.9 KB a tile): a lead of two tiles at one token. 99 tiles in
// outputs of 37, 46 and 16 tiles, the last row of the first and last outputs in a partial tile.
TEST_P(matmul_static_split_test, block_group_rows_each_written_once_with_one_threads_bits) {
  constexpr int n_in = 768;
  const int rows[] = {16 * 36 + 5, 16 * 46, 16 * 15 + 9};
  std::vector<std::vector<std::byte>> blocks;
  std::vector<weight> ws;
  for (int r : rows) {
    blocks.push_back(test::random_blocks(dtype::q4_0, r * n_in / 32, rng_));
    ws.push_back({blocks.back().data(), dtype::q4_0, r, n_in});
  }
  expect_same_bits_for_any_thread_count(ws, n_in);
}

// Panel-packed q2_k and q3_k (the K-quants with the fewest bits a weight: the most work a byte, so the
// panel kernels' token groups and row ranges meet the share bounds the most ways), rows ragged: each
// table's panel kernel (or its rows gathered from the panels) gives one thread's bits for any split.
TEST_P(matmul_static_split_test, block_panel_group_rows_each_written_once_with_one_threads_bits) {
  constexpr int n_in = 512;
  const int rows[] = {16 * 20 + 7, 16 * 9, 16 * 12 + 1};
  std::vector<test::panel_matrix> panels;
  std::vector<weight> ws;
  for (dtype t : {dtype::q2_k, dtype::q3_k})
    for (int r : rows) {
      panels.push_back(test::pack_panels(t, test::random_blocks(t, r * n_in / 256, rng_).data(), r, n_in));
      ws.push_back(panels.back().w);
    }
  expect_same_bits_for_any_thread_count(ws, n_in);
}

// i8 shares snap to whole register blocks inside each output; a small output (3 tiles) stays whole.
TEST_P(matmul_static_split_test, i8_group_rows_each_written_once_with_one_threads_bits) {
  constexpr int n_in = 256;
  const int rows[] = {16 * 37 + 5, 40, 16 * 18 + 9};
  std::vector<i8_matrix> packed;
  std::vector<weight> ws;
  std::uniform_int_distribution<int> q_dist(-127, 127);
  for (int r : rows) {
    std::vector<std::int8_t> q(static_cast<std::size_t>(r) * n_in);
    for (std::int8_t& v : q) v = static_cast<std::int8_t>(q_dist(rng_));
    const std::vector<float> scales(r, 1e-3f);
    packed.push_back(i8_matrix_pack(q.data(), scales.data(), r, n_in));
  }
  for (const i8_matrix& m : packed) ws.push_back(m.view());
  expect_same_bits_for_any_thread_count(ws, n_in);
}

INSTANTIATE_TEST_SUITE_P(all_isas, matmul_static_split_test, testing::ValuesIn(supported_tables()),
                         [](const testing::TestParamInfo<const kernel_table*>& info) { return std::string(isa_name(info.param->which)); });

}  // namespace
}  // namespace pagedserve::kernels
