// Block ownership: all-or-nothing growth, exact freeing, invariants under random churn.
#include <gtest/gtest.h>

#include <random>

#include "pagedserve/block_manager.hpp"

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
