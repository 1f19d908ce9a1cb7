// kernel_table::attend_heads against the same table's attend_group run row by row, each row over its own
// kv head's group of the same blocks: every row's accumulator, max and sum bit for bit (walking the
// heads chunk by chunk changes the schedule, never a row's arithmetic), over 1-12 heads times several
// tokens (causal ranges), windows, partial last groups, every K/V type, and two groups in a row.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/attend_rows_fixture.hpp"
#include "kernels/kv_prefetch_stream.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int block_size = attend_test_block_size;
constexpr int max_heads = 12;

class attend_heads_test : public testing::TestWithParam<const kernel_table*> {};

TEST_P(attend_heads_test, every_row_equals_attend_group_alone_bit_for_bit) {
  const kernel_table& kt = *GetParam();
  std::mt19937 rng(29);
  const int full = kv_group_blocks * block_size;
  struct shape {
    int n_heads, n_tokens, last_n, window;
  };
  const shape shapes[] = {
      {6, 1, full, 0}, {12, 1, full, 0}, {2, 1, 37, 0}, {5, 3, full - 5, 0}, {3, 7, full, 40},
      {12, 1, 1, 0},   {7, 2, 100, 17},  {1, 4, 55, 0}, {4, 1, 16, 0},       {9, 5, 90, 9},
  };
  for (dtype type : {dtype::f32, dtype::f16, dtype::i8, dtype::f8_e4m3, dtype::f8_e5m2})
    for (int head_size : {64, 128, 12}) {  // 64 and 128: AVX-512's register variants; 12: the loop of attend_group
      const two_groups_of_heads kv(max_heads, head_size, type, rng);
      for (const shape& sh : shapes) {
        // Row r: token r / n_heads, head r % n_heads.
        const auto ranges = causal_ranges(sh.n_heads, sh.n_tokens, sh.last_n, sh.window);
        const int n_rows = static_cast<int>(ranges.size());
        const auto q = random_vector(static_cast<std::size_t>(n_rows) * head_size, rng, -2.0f, 2.0f);
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
        row_states alone(n_rows, head_size), together(n_rows, head_size);
        std::vector<float> scores(static_cast<std::size_t>(n_rows) * attend_scores_floats(block_size), 0.0f);
        kv_prefetch_stream stream;  // no runs listed: advancing it must change nothing
        for (const std::vector<kv_group>& heads : kv.groups) {
          std::vector<attend_row> rows;
          std::vector<kv_group> groups;
          for (int r = 0; r < n_rows; ++r) {
            const auto [j0, n] = ranges[r];
            const kv_group& g = heads[r % sh.n_heads];
            const float* qr = q.data() + static_cast<std::size_t>(r) * head_size;
            kt.attend_group(alone.acc.data() + static_cast<std::size_t>(r) * head_size, &alone.max[r], &alone.sum[r], qr,
                            g, j0, n, head_size, scale, scores.data());
            rows.push_back({together.acc.data() + static_cast<std::size_t>(r) * head_size, &together.max[r],
                            &together.sum[r], qr, j0, n});
            groups.push_back(g);
            groups.back().ahead = &stream;
          }
          kt.attend_heads(rows.data(), groups.data(), n_rows, head_size, scale, scores.data());
        }
        EXPECT_TRUE(alone == together) << isa_name(kt.which) << " " << dtype_name(type) << " head " << head_size
                                       << " heads " << sh.n_heads << " tokens " << sh.n_tokens << " n " << sh.last_n
                                       << " window " << sh.window;
        EXPECT_GT(together.sum[0], 0.0f);  // the rows did attend
      }
    }
}

INSTANTIATE_TEST_SUITE_P(all_isas, attend_heads_test, testing::ValuesIn(supported_tables()),
                         [](const testing::TestParamInfo<const kernel_table*>& info) { return std::string(isa_name(info.param->which)); });

}  // namespace
}  // namespace pagedserve::kernels
