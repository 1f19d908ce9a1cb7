// Block ownership: all-or-nothing growth, exact freeing, invariants under random churn.
#include <gtest/gtest.h>

#include <random>

#include "kv/block_manager.hpp"

namespace pagedserve {
namespace {

TEST(block_manager, grows_tables_block_by_block_and_frees_them) {
  block_manager m(10, 16);
  EXPECT_TRUE(m.ensure_capacity(request_id{1}, 1));
  EXPECT_EQ(m.table(request_id{1}).size(), 1u);
  EXPECT_TRUE(m.ensure_capacity(request_id{1}, 16));
  EXPECT_EQ(m.table(request_id{1}).size(), 1u);
  EXPECT_TRUE(m.ensure_capacity(request_id{1}, 17));
  EXPECT_EQ(m.table(request_id{1}).size(), 2u);
  EXPECT_EQ(m.n_blocks_free(), 8);
  EXPECT_EQ(m.refcount(m.table(request_id{1})[0]), 1);
  m.free_sequence(request_id{1});
  EXPECT_EQ(m.n_blocks_free(), 10);
  EXPECT_FALSE(m.has_sequence(request_id{1}));
  m.free_sequence(request_id{1});  // unknown: ignored
  EXPECT_FALSE(m.find_invariant_violation());
}

TEST(block_manager, refuses_growth_it_cannot_complete_and_changes_nothing) {
  block_manager m(4, 16);
  EXPECT_TRUE(m.ensure_capacity(request_id{1}, 40));  // 3 blocks
  EXPECT_FALSE(m.ensure_capacity(request_id{2}, 40));
  EXPECT_FALSE(m.has_sequence(request_id{2}));
  EXPECT_EQ(m.n_blocks_free(), 1);
  EXPECT_FALSE(m.ensure_capacity(request_id{1}, 80));
  EXPECT_EQ(m.table(request_id{1}).size(), 3u);
  EXPECT_FALSE(m.find_invariant_violation());
}

TEST(block_manager, random_churn_keeps_invariants_and_ends_empty) {
  block_manager m(64, 16);
  std::mt19937 rng(7);
  std::vector<std::pair<request_id, int>> live;
  for (int i = 0; i < 5000; ++i) {
    if (!live.empty() && rng() % 3 == 0) {
      const std::size_t k = rng() % live.size();
      m.free_sequence(live[k].first);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    } else if (!live.empty() && rng() % 2 == 0) {
      auto& [id, n] = live[rng() % live.size()];
      if (m.ensure_capacity(id, n + 1 + static_cast<int>(rng() % 20))) n += 1;
    } else {
      const request_id id{static_cast<std::uint64_t>(i + 1)};
      const int n = 1 + static_cast<int>(rng() % 100);
      if (m.ensure_capacity(id, n)) live.emplace_back(id, n);
    }
    ASSERT_FALSE(m.find_invariant_violation()) << *m.find_invariant_violation();
  }
  for (auto& [id, n] : live) m.free_sequence(id);
  EXPECT_EQ(m.n_blocks_free(), 64);
  EXPECT_EQ(m.n_sequences(), 0);
  for (int b = 0; b < 64; ++b) EXPECT_EQ(m.refcount(block_id{b}), 0);
}

}  // namespace
}  // namespace pagedserve

namespace pagedserve {
namespace {

std::vector<token_id> iota_tokens(int n, token_id start = 100) {
  std::vector<token_id> t(n);
  for (int i = 0; i < n; ++i) t[i] = start + i;
  return t;
}

TEST(block_manager_prefix_cache, committed_blocks_are_reused_by_a_later_prompt_with_the_same_prefix) {
  block_manager m(16, 4);
  const auto prompt = iota_tokens(10);  // blocks [0..4) [4..8) and a partial one
  EXPECT_EQ(m.match_prefix(request_id{1}, prompt, 0), 0);
  ASSERT_TRUE(m.ensure_capacity(request_id{1}, 10));
  m.commit_full_blocks(request_id{1}, 0, std::span(prompt).first(8));
  const auto first_table = m.table(request_id{1});

  auto longer = iota_tokens(13);  // same first 10 tokens, then more
  EXPECT_EQ(m.match_prefix(request_id{2}, longer, 0), 8);
  EXPECT_EQ(m.table(request_id{2})[0], first_table[0]);
  EXPECT_EQ(m.table(request_id{2})[1], first_table[1]);
  EXPECT_EQ(m.refcount(first_table[0]), 2);
  EXPECT_EQ(m.prefix_hits(), 8u);
  EXPECT_EQ(m.prefix_queries(), 23u);
  ASSERT_TRUE(m.ensure_capacity(request_id{2}, 13));
  EXPECT_EQ(m.table(request_id{2}).size(), 4u);
  EXPECT_FALSE(m.find_invariant_violation());
}

TEST(block_manager_prefix_cache, switched_off_nothing_is_cached_or_matched) {
  block_manager m(16, 4, false);
  const auto prompt = iota_tokens(10);
  EXPECT_EQ(m.match_prefix(request_id{1}, prompt, 0), 0);
  ASSERT_TRUE(m.ensure_capacity(request_id{1}, 10));
  m.commit_full_blocks(request_id{1}, 0, std::span(prompt).first(8));
  EXPECT_EQ(m.n_blocks_cached(), 0);
  EXPECT_EQ(m.match_prefix(request_id{2}, prompt, 0), 0);
  EXPECT_EQ(m.prefix_queries(), 0u);
  EXPECT_FALSE(m.find_invariant_violation());
}

TEST(block_manager_prefix_cache, never_matches_the_block_holding_the_last_token_nor_other_salts) {
  block_manager m(16, 4);
  const auto prompt = iota_tokens(8);
  m.match_prefix(request_id{1}, prompt, 7);
  ASSERT_TRUE(m.ensure_capacity(request_id{1}, 8));
  m.commit_full_blocks(request_id{1}, 0, prompt);
  EXPECT_EQ(m.match_prefix(request_id{2}, prompt, 7), 4) << "the last token's block is recomputed";
  EXPECT_EQ(m.match_prefix(request_id{3}, prompt, 8), 0) << "another cache_salt shares nothing";
  auto different = prompt;
  different[1] = 1;
  EXPECT_EQ(m.match_prefix(request_id{4}, different, 7), 0);
  EXPECT_FALSE(m.find_invariant_violation());
}

TEST(block_manager_prefix_cache, freed_cached_blocks_stay_reusable_until_evicted_lru) {
  block_manager m(4, 4);
  const auto a = iota_tokens(9, 100), b = iota_tokens(9, 500);
  m.match_prefix(request_id{1}, a, 0);
  ASSERT_TRUE(m.ensure_capacity(request_id{1}, 9));
  m.commit_full_blocks(request_id{1}, 0, std::span(a).first(8));
  m.free_sequence(request_id{1});
  EXPECT_EQ(m.n_blocks_free(), 4);
  EXPECT_EQ(m.n_blocks_cached(), 2);
  EXPECT_EQ(m.match_prefix(request_id{2}, a, 0), 8) << "free but still cached";
  m.free_sequence(request_id{2});
  // A different prompt needing every block evicts them.
  m.match_prefix(request_id{3}, b, 0);
  ASSERT_TRUE(m.ensure_capacity(request_id{3}, 16));
  EXPECT_EQ(m.n_blocks_cached(), 0);
  m.free_sequence(request_id{3});
  EXPECT_EQ(m.match_prefix(request_id{4}, a, 0), 0);
  m.free_sequence(request_id{4});
  EXPECT_EQ(m.n_blocks_free(), 4);
  EXPECT_FALSE(m.find_invariant_violation());
}

// A draft model's K/V share the blocks: a cached block says whether they were written with it, and a
// block taken for new data loses the mark with its cache entry.
TEST(block_manager_prefix_cache, a_cached_block_carries_the_draft_kv_mark_of_its_writer_until_reused) {
  block_manager m(4, 4);
  const auto a = iota_tokens(9, 100), b = iota_tokens(9, 300), c = iota_tokens(16, 500);
  m.match_prefix(request_id{1}, a, 0);
  ASSERT_TRUE(m.ensure_capacity(request_id{1}, 9));
  m.commit_full_blocks(request_id{1}, 0, std::span(a).first(8), true);  // written by a mirroring sequence
  m.free_sequence(request_id{1});
  EXPECT_EQ(m.match_prefix(request_id{2}, a, 0), 8);
  EXPECT_TRUE(m.draft_kv_present(request_id{2}, 2));
  m.free_sequence(request_id{2});
  m.match_prefix(request_id{3}, b, 0);
  ASSERT_TRUE(m.ensure_capacity(request_id{3}, 9));
  m.commit_full_blocks(request_id{3}, 0, std::span(b).first(4), false);  // a lapsed one: no draft K/V
  m.commit_full_blocks(request_id{3}, 1, std::span(b).subspan(4, 4), true);
  m.free_sequence(request_id{3});
  EXPECT_EQ(m.match_prefix(request_id{4}, b, 0), 8);
  EXPECT_FALSE(m.draft_kv_present(request_id{4}, 2));
  EXPECT_FALSE(m.draft_kv_present(request_id{4}, 1));
  EXPECT_TRUE(m.draft_kv_present(request_id{4}, 0));
  m.free_sequence(request_id{4});
  // Every block taken for new data: none keeps the mark, though `a` is written again without it.
  m.match_prefix(request_id{5}, c, 0);
  ASSERT_TRUE(m.ensure_capacity(request_id{5}, 16));
  EXPECT_FALSE(m.find_invariant_violation());
  m.free_sequence(request_id{5});
  m.match_prefix(request_id{6}, a, 0);
  ASSERT_TRUE(m.ensure_capacity(request_id{6}, 9));
  m.commit_full_blocks(request_id{6}, 0, std::span(a).first(8));
  m.free_sequence(request_id{6});
  EXPECT_EQ(m.match_prefix(request_id{7}, a, 0), 8);
  EXPECT_FALSE(m.draft_kv_present(request_id{7}, 1));
  EXPECT_FALSE(m.find_invariant_violation());
}

}  // namespace
}  // namespace pagedserve
