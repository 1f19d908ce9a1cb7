// The scheduling step with a block manager that runs out: admissions wait, the newest running
// sequence is preempted for recompute, samples fork a computed prompt and copy the block they write,
// and prompts reuse blocks from the prefix cache.
#include <gtest/gtest.h>

#include <numeric>

#include "support/scheduling_harness.hpp"

namespace pagedserve {
namespace {

using test::make_sequence;
using test::scheduling;

TEST(schedule_step_blocks, an_admission_without_blocks_waits_in_its_place) {
  scheduling p({8, 100, 512}, 2, 16);  // two blocks: two 2-token prompts
  for (std::uint64_t i = 1; i <= 4; ++i) p.state.add(make_sequence(i, 2, i == 1 ? 1 : 5));
  auto s1 = p.plan().chunks;
  ASSERT_EQ(s1.size(), 2u);
  EXPECT_EQ(p.state.n_waiting(), 2);
  EXPECT_EQ(p.blocks.n_sequences(), 2) << "a refused admission holds no blocks";
  EXPECT_TRUE(p.run().updates[0].finished) << "seq 1 generates its one token";
  auto s2 = p.plan().chunks;  // seq 2 decodes; seq 3, first in the queue, takes seq 1's block
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_EQ(s2[1].id, request_id{3}) << "first come, first served";
  EXPECT_EQ(p.state.waiting.front().id, request_id{4});
}

TEST(schedule_step_blocks, a_running_sequence_without_room_preempts_the_newest_for_recompute) {
  scheduling p({8, 100, 512}, 2, 4);  // two blocks of 4 tokens
  p.state.add(make_sequence(1, 4, 2));
  p.state.add(make_sequence(2, 4, 50));
  p.plan();
  p.run();  // both hold one full block and sampled a fifth token
  const step_plan d = p.plan();  // seq 1 needs a second block: seq 2, the newest, gives way
  EXPECT_EQ(d.preempted, std::vector<request_id>{request_id{2}});
  ASSERT_EQ(d.chunks.size(), 1u);
  EXPECT_EQ(d.chunks[0].id, request_id{1});
  EXPECT_EQ(p.state.n_preemptions, 1u);
  EXPECT_FALSE(p.blocks.has_sequence(request_id{2}));
  EXPECT_EQ(p.state.waiting.front().n_computed, 0);
  EXPECT_TRUE(p.run().updates[0].finished);  // seq 1's second token: done, its blocks free

  // Readmitted, seq 2 recomputes prompt + generated tokens (4 + 1) and samples its next token.
  const auto r = p.plan().chunks;
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].id, request_id{2});
  EXPECT_EQ(r[0].first, 0);
  EXPECT_EQ(r[0].n_tokens, 5);
  EXPECT_TRUE(r[0].samples);
  EXPECT_EQ(p.run().updates[0].used.completion_tokens, 2) << "generated tokens survive preemption";
}

TEST(schedule_step_blocks, a_sequence_that_is_itself_the_newest_gives_way_and_the_older_keep_running) {
  scheduling p({8, 100, 512}, 3, 4, /*prefix_caching=*/true);
  p.state.add(make_sequence(1, 4, 50));
  p.state.add(make_sequence(2, 4, 50));
  p.plan();
  p.run();
  // Both need a second block for their fifth token; one is free: seq 1 takes it, seq 2 has none left.
  const step_plan d = p.plan();
  EXPECT_EQ(d.preempted, std::vector<request_id>{request_id{2}});
  ASSERT_EQ(d.chunks.size(), 1u);
  EXPECT_EQ(d.chunks[0].id, request_id{1});
  EXPECT_EQ(p.blocks.table(request_id{1}).size(), 2u);
  // Its freed block and seq 1's cached first block would fit it again, but a step that preempted
  // admits nothing: readmitting the sequence it just preempted would only thrash.
  EXPECT_EQ(p.state.n_waiting(), 1);
  EXPECT_FALSE(p.blocks.has_sequence(request_id{2}));
  EXPECT_EQ(p.blocks.find_invariant_violation(), std::nullopt);
}

sequence sample(std::uint64_t id, int n_prompt, std::optional<std::uint64_t> fork_of = std::nullopt) {
  sequence s = make_sequence(id, n_prompt, 4, 7);
  if (fork_of) s.fork_of = request_id{*fork_of};
  return s;
}

TEST(schedule_step_blocks, samples_wait_for_the_prompt_then_share_its_blocks_and_copy_the_one_they_write) {
  scheduling p({8, 16, 512});
  p.state.add(sample(1, 20));
  p.state.add(sample(2, 20, 1));
  p.state.add(sample(3, 20, 1));
  p.state.add(sample(4, 3));  // an unrelated request behind them is not held up

  auto s1 = p.plan().chunks;  // 16 of the 20 prompt tokens; the samples wait
  ASSERT_EQ(s1.size(), 1u);
  EXPECT_EQ(s1[0].n_tokens, 16);
  p.run();

  auto s2 = p.plan().chunks;  // the rest of the prompt; the samples still wait, request 4 goes ahead
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_EQ(s2[0].id, request_id{1});
  EXPECT_TRUE(s2[0].samples);
  EXPECT_EQ(s2[1].id, request_id{4});
  EXPECT_EQ(p.state.n_waiting(), 2);
  p.run();

  const auto& source = p.blocks.table(request_id{1});
  const block_id full = source[0], last = source[1];  // tokens 0..15, and 16..19 plus what 1 generates
  const step_plan s3 = p.plan();  // decodes of 1 and 4, then both samples forked from 1
  ASSERT_EQ(s3.chunks.size(), 4u);
  for (int i : {2, 3}) {
    const step_chunk& c = s3.chunks[i];
    EXPECT_TRUE(c.admitted);
    EXPECT_EQ(c.fork_from, request_id{1});
    EXPECT_EQ(c.first, 19);
    EXPECT_EQ(c.n_tokens, 1);
    EXPECT_TRUE(c.samples);
    const auto& table = p.blocks.table(c.id);
    ASSERT_EQ(table.size(), 2u);
    EXPECT_EQ(table[0], full) << "the full prompt block is shared";
    EXPECT_NE(table[1], last) << "the block holding the recomputed token is a copy";
  }
  EXPECT_EQ(p.blocks.refcount(full), 3);
  EXPECT_EQ(p.blocks.refcount(last), 1);
  ASSERT_EQ(s3.block_copies.size(), 2u);
  for (const auto& copy : s3.block_copies) EXPECT_EQ(copy.from, last);
  EXPECT_EQ(s3.block_copies[0].to, p.blocks.table(request_id{2})[1]);
  EXPECT_EQ(s3.block_copies[1].to, p.blocks.table(request_id{3})[1]);
  EXPECT_EQ(p.blocks.n_forks(), 2u);
  p.run();
  EXPECT_EQ(p.state.find(request_id{2})->n_generated(), 1);
  EXPECT_EQ(p.state.find(request_id{2})->n_computed, 20);
  EXPECT_EQ(p.blocks.find_invariant_violation(), std::nullopt);
}

TEST(schedule_step_blocks, a_sample_whose_first_sample_is_gone_computes_the_prompt_itself) {
  scheduling p({8, 64, 512});
  p.state.add(sample(1, 20));
  p.state.add(sample(2, 20, 1));
  ASSERT_EQ(p.plan().chunks.size(), 1u);
  p.state.request_finish(request_id{1}, finish_reason::cancelled);
  p.run();
  const step_plan s2 = p.plan();
  ASSERT_EQ(s2.finished.size(), 1u);
  ASSERT_EQ(s2.chunks.size(), 1u);
  EXPECT_EQ(s2.chunks[0].id, request_id{2});
  EXPECT_FALSE(s2.chunks[0].fork_from);
  EXPECT_EQ(s2.chunks[0].first, 0);
  EXPECT_EQ(s2.chunks[0].n_tokens, 20);
}

TEST(schedule_step_blocks, only_the_same_prompt_is_forked) {
  scheduling p({8, 64, 512});
  p.state.add(sample(1, 20));
  p.state.add(sample(2, 21, 1));  // a different prompt under the same group: computed on its own
  ASSERT_EQ(p.plan().chunks.size(), 1u);
  p.run();
  const auto s2 = p.plan().chunks;
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_FALSE(s2[1].fork_from);
  EXPECT_EQ(s2[1].first, 0);
}

TEST(schedule_step_blocks, a_fork_without_a_block_to_copy_into_waits_and_forks_later) {
  scheduling p({8, 64, 512}, 3, 16);
  p.state.add(sample(1, 20));      // two blocks
  p.state.add(sample(2, 20, 1));
  auto short_one = make_sequence(5, 2, 2);  // the third block, for two tokens
  p.state.add(short_one);
  ASSERT_EQ(p.plan().chunks.size(), 2u);
  p.run();
  const step_plan s2 = p.plan();  // the fork needs a block for its copy: none
  ASSERT_EQ(s2.chunks.size(), 2u);
  EXPECT_EQ(p.state.n_waiting(), 1);
  EXPECT_FALSE(p.blocks.has_sequence(request_id{2}));
  EXPECT_TRUE(s2.block_copies.empty());
  EXPECT_TRUE(p.run().updates[1].finished);  // seq 5 ends, its block is free
  const step_plan s3 = p.plan();
  ASSERT_EQ(s3.chunks.size(), 2u);
  EXPECT_EQ(s3.chunks[1].fork_from, request_id{1});
  EXPECT_EQ(s3.chunks[1].first, 19);
  EXPECT_EQ(s3.block_copies.size(), 1u);
}

TEST(schedule_step_blocks, a_prompt_with_a_cached_prefix_starts_after_it_and_shares_its_blocks) {
  scheduling p({8, 512, 512}, 64, 16, /*prefix_caching=*/true);
  sequence first = make_sequence(1, 40, 3);
  std::iota(first.tokens.begin(), first.tokens.end(), 100);
  p.state.add(first);
  p.plan();
  p.run();  // blocks 0 and 1 (tokens 0..31) enter the cache
  sequence second = make_sequence(2, 35, 3);
  std::copy(first.tokens.begin(), first.tokens.begin() + 35, second.tokens.begin());
  second.tokens[34] = 7;  // the third block differs
  p.state.add(second);
  const auto s2 = p.plan().chunks;
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_EQ(s2[1].id, request_id{2});
  EXPECT_EQ(s2[1].first, 32);
  EXPECT_EQ(s2[1].n_tokens, 3);
  EXPECT_TRUE(s2[1].samples);
  for (int b : {0, 1}) {
    EXPECT_EQ(p.blocks.table(request_id{2})[b], p.blocks.table(request_id{1})[b]);
    EXPECT_EQ(p.blocks.refcount(p.blocks.table(request_id{2})[b]), 2);
  }
  EXPECT_EQ(p.blocks.prefix_hits(), 32u);
  p.run();
  EXPECT_EQ(p.state.find(request_id{2})->n_computed, 35);
}

}  // namespace
}  // namespace pagedserve
