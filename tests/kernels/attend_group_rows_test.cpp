// kernel_table::attend_group_rows against the same table's attend_group run row by row: every row's
// accumulator, max and sum bit for bit (rows interleaved change the schedule, never a row's
// arithmetic), over odd row counts, GQA groups of 1, 4 and 8 heads times several tokens (causal
// ranges), windows, partial last groups, every K/V type, and two groups in a row (the rescale).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/attend_rows_fixture.hpp"
#include "kernels/kv_prefetch_stream.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int block_size = attend_test_block_size;

class attend_group_rows_test : public testing::TestWithParam<const kernel_table*> {};

TEST_P(attend_group_rows_test, every_row_equals_attend_group_alone_bit_for_bit) {
  const kernel_table& kt = *GetParam();
  std::mt19937 rng(23);
  const int full = kv_group_blocks * block_size;
  struct shape {
    int gqa, n_tokens, last_n, window;
  };
  const shape shapes[] = {
      {1, 1, full, 0},  {1, 3, full, 0},      {4, 1, full, 0},  {8, 1, full, 0},      {8, 1, 37, 0},
      {1, 5, 21, 0},    {4, 3, full - 5, 0},  {8, 2, 100, 0},   {1, 7, full, 40},     {4, 5, 90, 17},
      {8, 3, full, 33}, {1, 9, 16, 0},        {4, 1, 1, 0},     {8, 8, full, 0},      {1, 13, 55, 9},
  };
  for (dtype type : {dtype::f32, dtype::f16, dtype::i8, dtype::f8_e4m3, dtype::f8_e5m2})
    for (int head_size : {64, 128, 12}) {  // 64 and 128: AVX-512's register variants; 12: the loop of attend_group
      const two_groups_of_heads kv(1, head_size, type, rng);
      for (const shape& sh : shapes) {
        const auto ranges = causal_ranges(sh.gqa, sh.n_tokens, sh.last_n, sh.window);
        const int n_rows = static_cast<int>(ranges.size());
        const auto q = random_vector(static_cast<std::size_t>(n_rows) * head_size, rng, -2.0f, 2.0f);
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
        row_states alone(n_rows, head_size), together(n_rows, head_size);
        std::vector<float> scores(static_cast<std::size_t>(n_rows) * attend_scores_floats(block_size), 0.0f);
        kv_prefetch_stream stream;  // no runs listed: advancing it must change nothing
        for (const std::vector<kv_group>& heads : kv.groups) {
          const kv_group& g0 = heads[0];
          kv_group g = g0;
          g.ahead = &stream;
          std::vector<attend_row> rows;
          for (int r = 0; r < n_rows; ++r) {
            const auto [j0, n] = ranges[r];
            const float* qr = q.data() + static_cast<std::size_t>(r) * head_size;
            kt.attend_group(alone.acc.data() + static_cast<std::size_t>(r) * head_size, &alone.max[r], &alone.sum[r], qr,
                            g0, j0, n, head_size, scale, scores.data());
            rows.push_back({together.acc.data() + static_cast<std::size_t>(r) * head_size, &together.max[r],
                            &together.sum[r], qr, j0, n});
          }
          kt.attend_group_rows(rows.data(), n_rows, g, head_size, scale, scores.data());
        }
        EXPECT_TRUE(alone == together) << isa_name(kt.which) << " " << dtype_name(type) << " head " << head_size
                                       << " gqa " << sh.gqa << " tokens " << sh.n_tokens << " n " << sh.last_n
                                       << " window " << sh.window;
        EXPECT_GT(together.sum[0], 0.0f);  // the rows did attend
      }
    }
}

INSTANTIATE_TEST_SUITE_P(all_isas, attend_group_rows_test, testing::ValuesIn(supported_tables()),
                         [](const testing::TestParamInfo<const kernel_table*>& info) { return std::string(isa_name(info.param->which)); });

}  // namespace
}  // namespace pagedserve::kernels
