// Parallel sampling: forked sequences share the prompt's blocks by reference count and copy a
// shared block before writing into it.
#include <gtest/gtest.h>

#include <numeric>

#include "kv/block_manager.hpp"

namespace pagedserve {
namespace {

std::vector<token_id> prompt_of(int n) {
  std::vector<token_id> t(n);
  std::iota(t.begin(), t.end(), 100);
  return t;
}

// A parent that computed a 10-token prompt in blocks of 4: [0..4) [4..8) committed, [8..10) partial.
block_manager parent_with_prompt(const std::vector<token_id>& prompt) {
  block_manager m(12, 4);
  m.match_prefix(request_id{1}, prompt, 0);
  EXPECT_TRUE(m.ensure_capacity(request_id{1}, static_cast<int>(prompt.size())));
  m.commit_full_blocks(request_id{1}, 0, std::span(prompt).first(8));
  return m;
}

TEST(block_manager_cow, a_fork_shares_every_prompt_block_by_reference_count) {
  const auto prompt = prompt_of(10);
  block_manager m = parent_with_prompt(prompt);
  const auto parent = m.table(request_id{1});
  m.fork(request_id{1}, request_id{2}, 10, 9);
  EXPECT_EQ(m.table(request_id{2}), parent);
  for (block_id b : parent) EXPECT_EQ(m.refcount(b), 2);
  EXPECT_EQ(m.n_blocks_free(), 12 - 3);  // nothing allocated
  EXPECT_EQ(m.n_matched_tokens(request_id{2}), 9);
  EXPECT_EQ(m.n_committed_blocks(request_id{2}), 2);
  EXPECT_EQ(m.n_forks(), 1u);
  EXPECT_FALSE(m.find_invariant_violation());
}

TEST(block_manager_cow, writing_a_shared_block_copies_it_and_the_last_holder_writes_in_place) {
  const auto prompt = prompt_of(10);
  block_manager m = parent_with_prompt(prompt);
  const auto parent = m.table(request_id{1});
  m.fork(request_id{1}, request_id{2}, 10, 9);
  m.fork(request_id{1}, request_id{3}, 10, 9);
  EXPECT_EQ(m.refcount(parent[2]), 3);

  // Sample 2 recomputes position 9 (the partial block): it gets a copy; the full blocks stay shared.
  std::vector<block_manager::block_copy> copies;
  ASSERT_TRUE(m.ensure_capacity(request_id{2}, 10, 9, copies));
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].from, parent[2]);
  EXPECT_EQ(copies[0].to, m.table(request_id{2})[2]);
  EXPECT_NE(m.table(request_id{2})[2], parent[2]);
  EXPECT_EQ(m.table(request_id{2})[0], parent[0]);
  EXPECT_EQ(m.refcount(parent[2]), 2);
  EXPECT_EQ(m.refcount(parent[0]), 3);

  // Sample 3 too; then the parent, the block's last holder, appends position 10 without a copy.
  copies.clear();
  ASSERT_TRUE(m.ensure_capacity(request_id{3}, 10, 9, copies));
  EXPECT_EQ(copies.size(), 1u);
  copies.clear();
  ASSERT_TRUE(m.ensure_capacity(request_id{1}, 11, 10, copies));
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(m.table(request_id{1}), parent);
  EXPECT_EQ(m.refcount(parent[2]), 1);
  EXPECT_EQ(m.n_block_copies(), 2u);

  // A later write into a private block, or growth into a new one, copies nothing.
  ASSERT_TRUE(m.ensure_capacity(request_id{2}, 13, 12, copies));
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(m.table(request_id{2}).size(), 4u);
  EXPECT_FALSE(m.find_invariant_violation());

  for (std::uint64_t id : {1, 2, 3}) m.free_sequence(request_id{id});
  EXPECT_EQ(m.n_blocks_free(), 12);
  EXPECT_FALSE(m.find_invariant_violation());
}

TEST(block_manager_cow, a_copy_the_pool_cannot_give_refuses_the_write_and_changes_nothing) {
  const auto prompt = prompt_of(10);
  block_manager m(3, 4);  // exactly the parent's blocks
  m.match_prefix(request_id{1}, prompt, 0);
  ASSERT_TRUE(m.ensure_capacity(request_id{1}, 10));
  m.fork(request_id{1}, request_id{2}, 10, 9);
  std::vector<block_manager::block_copy> copies;
  EXPECT_FALSE(m.ensure_capacity(request_id{2}, 10, 9, copies));
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(m.table(request_id{2}), m.table(request_id{1}));
  EXPECT_FALSE(m.find_invariant_violation());
}

TEST(block_manager_cow, a_forked_sample_commits_its_own_blocks_into_the_prefix_cache_chain) {
  // Prompt of exactly two blocks: the fork recomputes position 7, inside the second (full) block.
  const auto prompt = prompt_of(8);
  block_manager m(12, 4);
  m.match_prefix(request_id{1}, prompt, 0);
  ASSERT_TRUE(m.ensure_capacity(request_id{1}, 8));
  m.commit_full_blocks(request_id{1}, 0, prompt);
  m.fork(request_id{1}, request_id{2}, 8, 7);
  EXPECT_EQ(m.n_committed_blocks(request_id{2}), 1);
  std::vector<block_manager::block_copy> copies;
  ASSERT_TRUE(m.ensure_capacity(request_id{2}, 8, 7, copies));
  EXPECT_EQ(copies.size(), 1u);
  // The sample then commits block 1 (same tokens): its chain continues from the shared block 0.
  m.commit_full_blocks(request_id{2}, 1, std::span(prompt).subspan(4, 4));
  EXPECT_EQ(m.n_committed_blocks(request_id{2}), 2);
  // A third prompt with the same prefix still finds the parent's cached blocks.
  auto longer = prompt_of(12);
  EXPECT_EQ(m.match_prefix(request_id{3}, longer, 0), 8);
  EXPECT_EQ(m.table(request_id{3})[1], m.table(request_id{1})[1]);
  EXPECT_FALSE(m.find_invariant_violation());
}

}  // namespace
}  // namespace pagedserve
