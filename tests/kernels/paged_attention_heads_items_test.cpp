// MHA paged attention's work items cover as many kv heads as the thread count and each sequence's share
// of the work allow (attention_items in ops.cpp): one head per item on many threads, several
// (kernel_table::attend_heads) on few, a long sequence cut into more items than short ones beside it.
// The output must not depend on it: a decode token's bits are the same on 1, 2, 3 and 12 threads, alone
// or beside other sequences of equal or very unequal lengths, and match the reference within rounding.
#include <gtest/gtest.h>

#include <tbb/task_arena.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/kernel_test_support.hpp"
#include "kv/kv_cache.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int block_size = 16, n_heads = 12;

class paged_attention_heads_items_test : public testing::TestWithParam<const kernel_table*> {};

// Each sequence's last token: one step of all, on 1, 2, 3 and 12 threads, and the first sequence's alone.
void expect_same_bits_for_any_items(const kernel_table& kt, const std::vector<int>& lens) {
  const int n_blocks = std::accumulate(lens.begin(), lens.end(), 0, [](int a, int l) { return a + (l + block_size - 1) / block_size; });
  const int max_len = *std::max_element(lens.begin(), lens.end());
  const int n = static_cast<int>(lens.size());
  for (dtype type : {dtype::f32, dtype::f16, dtype::i8}) {
    for (int head_size : {64, 12}) {
      SCOPED_TRACE(std::string(dtype_name(type)) + " head_size=" + std::to_string(head_size));
      std::mt19937 rng(5);
      const int dim = n_heads * head_size;
      kv_cache cache(1, n_blocks + 2, block_size, n_heads, head_size, type);
      std::vector<std::int32_t> blocks(cache.n_blocks()), tables, offsets;
      std::iota(blocks.begin(), blocks.end(), 0);
      std::shuffle(blocks.begin(), blocks.end(), rng);
      int next = 0;
      for (int len : lens) {
        offsets.push_back(static_cast<std::int32_t>(tables.size()));
        for (int b = 0; b < (len + block_size - 1) / block_size; ++b) tables.push_back(blocks[next++]);
        for (int p = 0; p < len; ++p) {
          const auto k = random_vector(dim, rng, -2.0f, 2.0f), v = random_vector(dim, rng);
          cache.store(*kernel_table_select(), 0, tables[offsets.back() + p / block_size] * block_size + p % block_size,
                      k.data(), v.data());
        }
      }
      const auto q = random_vector(static_cast<std::size_t>(lens.size()) * dim, rng, -2.0f, 2.0f);
      auto run = [&](int n_threads, int n_seqs) {
        std::vector<std::int32_t> seq_of, pos_of;
        for (int s = 0; s < n_seqs; ++s) seq_of.push_back(s), pos_of.push_back(lens[s] - 1);
        const attention_batch batch{seq_of.data(), pos_of.data(), tables.data(), offsets.data(), n_seqs, max_len};
        std::vector<float> out(static_cast<std::size_t>(n_seqs) * dim, -7.0f);
        tbb::task_arena(n_threads).execute(
            [&] { ops::paged_attention(kt, out.data(), q.data(), cache.layer(0), batch, n_heads, n_heads, head_size); });
        return out;
      };
      const auto one_head_items = run(12, 1);  // 12 threads: one kv head per item, attend_group_rows
      EXPECT_EQ(run(1, 1), one_head_items);    // all twelve heads in one item
      EXPECT_EQ(run(2, 1), one_head_items);    // six heads per item
      const auto step = run(2, n);             // items by each sequence's share of the work
      EXPECT_EQ(std::vector<float>(step.begin(), step.begin() + dim), one_head_items);
      EXPECT_EQ(run(1, n), step);
      EXPECT_EQ(run(3, n), step);
      EXPECT_EQ(run(12, n), step);
      std::vector<std::int32_t> seq_of(n), pos_of;
      std::iota(seq_of.begin(), seq_of.end(), 0);
      for (int len : lens) pos_of.push_back(len - 1);
      const attention_batch batch{seq_of.data(), pos_of.data(), tables.data(), offsets.data(), n, max_len};
      std::vector<float> expected(step.size());
      reference::paged_attention(expected.data(), q.data(), cache.layer(0), batch, n_heads, n_heads, head_size);
      for (std::size_t i = 0; i < step.size(); ++i) ASSERT_NEAR(step[i], expected[i], 1e-4f) << i;
    }
  }
}

TEST_P(paged_attention_heads_items_test, output_is_the_same_for_any_item_grouping) {
  expect_same_bits_for_any_items(*GetParam(), {165, 300, 40});  // blocks: 11, 19, 3
}

// One long sequence beside short ones: the long one's heads are cut into several items, the short ones'
// stay whole; the long one first (its token alone against the step) and last.
TEST_P(paged_attention_heads_items_test, unequal_lengths_give_the_same_bits) {
  expect_same_bits_for_any_items(*GetParam(), {2000, 20, 20, 20, 20, 20, 20, 20});
  expect_same_bits_for_any_items(*GetParam(), {20, 35, 20, 17, 20, 20, 1200});
}

// A prefill chunk of one MHA sequence (tokens of tiles of up to 8, attended one kv head per item on the
// rows kernel, which shares each K/V load among a tile's tokens) gives every token the bits it gets
// decoded alone (one token, its heads cut by work), on any thread count.
TEST_P(paged_attention_heads_items_test, a_prefill_chunk_gives_each_token_its_decode_bits) {
  const kernel_table& kt = *GetParam();
  for (dtype type : {dtype::f32, dtype::f16, dtype::i8}) {
    SCOPED_TRACE(std::string(dtype_name(type)));
    constexpr int head_size = 64, len = 150, chunk = 21;  // the chunk: positions 129..149, tiles 8 + 8 + 5
    const int dim = n_heads * head_size;
    std::mt19937 rng(9);
    kv_cache cache(1, (len + block_size - 1) / block_size, block_size, n_heads, head_size, type);
    std::vector<std::int32_t> table(cache.n_blocks());
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), rng);
    for (int p = 0; p < len; ++p) {
      const auto k = random_vector(dim, rng, -2.0f, 2.0f), v = random_vector(dim, rng);
      cache.store(*kernel_table_select(), 0, table[p / block_size] * block_size + p % block_size, k.data(), v.data());
    }
    const auto q = random_vector(static_cast<std::size_t>(chunk) * dim, rng, -2.0f, 2.0f);
    const std::int32_t offset = 0;
    auto run = [&](int n_threads, int first, int n_tokens) {
      std::vector<std::int32_t> seq_of(n_tokens, 0), pos_of;
      for (int t = 0; t < n_tokens; ++t) pos_of.push_back(len - chunk + first + t);
      const attention_batch batch{seq_of.data(), pos_of.data(), table.data(), &offset, n_tokens, len};
      std::vector<float> out(static_cast<std::size_t>(n_tokens) * dim, -7.0f);
      tbb::task_arena(n_threads).execute([&] {
        ops::paged_attention(kt, out.data(), q.data() + static_cast<std::size_t>(first) * dim, cache.layer(0), batch,
                             n_heads, n_heads, head_size);
      });
      return out;
    };
    const auto chunked = run(2, 0, chunk);
    EXPECT_EQ(run(1, 0, chunk), chunked);
    EXPECT_EQ(run(3, 0, chunk), chunked);
    for (int t = 0; t < chunk; ++t)
      for (int n_threads : {1, 2}) {
        const auto alone = run(n_threads, t, 1);
        ASSERT_EQ(alone, std::vector<float>(chunked.begin() + static_cast<std::ptrdiff_t>(t) * dim,
                                            chunked.begin() + static_cast<std::ptrdiff_t>(t + 1) * dim))
            << "token " << t << " on " << n_threads << " threads";
      }
  }
}

INSTANTIATE_TEST_SUITE_P(all_isas, paged_attention_heads_items_test, testing::ValuesIn(supported_tables()),
                         [](const testing::TestParamInfo<const kernel_table*>& info) { return std::string(isa_name(info.param->which)); });

}  // namespace
}  // namespace pagedserve::kernels
