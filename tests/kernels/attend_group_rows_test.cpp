// kernel_table::attend_group_rows against the same table's attend_group run row by row: every row's
// accumulator, max and sum bit for bit (rows interleaved change the schedule, never a row's
// arithmetic), over odd row counts, GQA groups of 1, 4 and 8 heads times several tokens (causal
// ranges), windows, partial last groups, every K/V type, and two groups in a row (the rescale).
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/kernel_test_support.hpp"
#include "kernels/kv_prefetch_stream.hpp"
#include "kv/kv_cache.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int block_size = 16;

// Two groups of kv_group_blocks blocks of one kv head, random keys and values, blocks shuffled.
struct two_groups {
  kv_cache cache;
  kv_group groups[2];

  two_groups(int head_size, dtype type, std::mt19937& rng) : cache(1, 2 * kv_group_blocks + 3, block_size, 1, head_size, type) {
    std::vector<int> blocks(cache.n_blocks());
    std::iota(blocks.begin(), blocks.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), rng);
    const paged_kv_layer kv = cache.layer(0);
    const std::size_t elem = dtype_size(type);
    for (int gi = 0; gi < 2; ++gi) {
      kv_group& g = groups[gi];
      g.block_size = block_size, g.type = type;
      for (int b = 0; b < kv_group_blocks; ++b) {
        const int block = blocks[gi * kv_group_blocks + b];
        for (int s = 0; s < block_size; ++s) {
          const auto k = random_vector(head_size, rng, -3.0f, 3.0f), v = random_vector(head_size, rng);
          cache.store(*kernel_table_select(), 0, block * block_size + s, k.data(), v.data());
        }
        const std::size_t off = block * kv.block_stride + kv.head_offset(0, 0);  // elements
        g.k[b] = static_cast<const std::byte*>(kv.k_base) + off * elem;
        g.v[b] = static_cast<const std::byte*>(kv.v_base) + off * elem;
        if (type == dtype::i8) g.k_scales[b] = kv.k_scales + off / head_size, g.v_scales[b] = kv.v_scales + off / head_size;
      }
    }
  }
};

// Per-row state of one attention row: accumulator, running max and sum.
struct row_states {
  std::vector<float> acc, max, sum;
  row_states(int n_rows, int head_size)
      : acc(static_cast<std::size_t>(n_rows) * head_size, 0.0f), max(n_rows, -INFINITY), sum(n_rows, 0.0f) {}
  bool operator==(const row_states& o) const {
    auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    return same(acc, o.acc) && same(max, o.max) && same(sum, o.sum);
  }
};

// The rows of `n_tokens` consecutive tokens times `gqa` heads, as paged attention lists them: token t
// (0-based) sees keys up to last_n - (n_tokens - 1 - t), from its window's start when window > 0.
std::vector<std::pair<int, int>> causal_ranges(int gqa, int n_tokens, int last_n, int window) {
  std::vector<std::pair<int, int>> ranges;
  for (int t = 0; t < n_tokens; ++t)
    for (int h = 0; h < gqa; ++h) {
      const int n = std::max(1, last_n - (n_tokens - 1 - t));
      ranges.emplace_back(window > 0 ? std::max(0, n - window) : 0, n);
    }
  return ranges;
}

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
      const two_groups kv(head_size, type, rng);
      for (const shape& sh : shapes) {
        const auto ranges = causal_ranges(sh.gqa, sh.n_tokens, sh.last_n, sh.window);
        const int n_rows = static_cast<int>(ranges.size());
        const auto q = random_vector(static_cast<std::size_t>(n_rows) * head_size, rng, -2.0f, 2.0f);
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
        row_states alone(n_rows, head_size), together(n_rows, head_size);
        std::vector<float> scores(static_cast<std::size_t>(n_rows) * attend_scores_floats(block_size), 0.0f);
        kv_prefetch_stream stream;  // no runs listed: advancing it must change nothing
        for (const kv_group& g0 : kv.groups) {
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
