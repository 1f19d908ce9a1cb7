// Thousands of seeded random steps over a small pool — arrivals, samples of one prompt, repeated
// prefixes, cancels, stop tokens — and after every step the block manager's invariants hold, every
// block a step writes is its sequence's alone, no two tokens of a step write one slot, and every
// sequence ends, giving all blocks back.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "support/scheduling_harness.hpp"

namespace pagedserve {
namespace {

void expect_sound(const test::scheduling& p, const step_plan& plan) {
  ASSERT_EQ(p.blocks.find_invariant_violation(), std::nullopt);
  for (const sequence& s : p.state.waiting) ASSERT_FALSE(p.blocks.has_sequence(s.id)) << s.id.value;
  for (const sequence& s : p.state.running) ASSERT_TRUE(p.blocks.has_sequence(s.id)) << s.id.value;
  ASSERT_EQ(p.blocks.n_sequences(), p.state.n_running());
  ASSERT_LE(plan.batch.n_tokens(), p.state.limits.max_num_batched_tokens);
  ASSERT_LE(static_cast<int>(plan.chunks.size()), p.state.limits.max_num_seqs);
  const int bs = p.blocks.block_size();
  std::set<std::int32_t> slots(plan.batch.slots.begin(), plan.batch.slots.end());
  ASSERT_EQ(static_cast<int>(slots.size()), plan.batch.n_tokens()) << "two tokens write one KV slot";
  for (const step_chunk& c : plan.chunks) {
    const auto& table = p.blocks.table(c.id);
    for (int pos = c.first; pos < c.first + c.n_tokens; ++pos)
      ASSERT_EQ(p.blocks.refcount(table[pos / bs]), 1) << "seq " << c.id.value << " writes a shared block";
  }
}

TEST(schedule_step_random, thousands_of_random_steps_keep_the_pool_sound_and_end_every_sequence) {
  for (const bool prefix_caching : {false, true}) {
    SCOPED_TRACE(prefix_caching ? "prefix caching" : "no prefix caching");
    constexpr int block_size = 4, n_blocks = 24;
    test::scheduling p({6, 24, n_blocks * block_size, 64, 2.0, 4}, n_blocks, block_size, prefix_caching);
    std::mt19937 rng(prefix_caching ? 11 : 5);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    std::set<std::uint64_t> live;
    std::uint64_t next_id = 1;
    int n_ended = 0;
    auto ended = [&](const std::vector<sequence_update>& updates) {
      for (const sequence_update& u : updates)
        if (u.finished) n_ended += static_cast<int>(live.erase(u.id.value));
    };
    constexpr int arriving_steps = 2000, max_steps = 5000;
    int step = 0;
    for (; step < max_steps && (step < arriving_steps || !live.empty()); ++step) {
      if (step < arriving_steps && pick(0, 2) == 0) {
        // A prompt over three token values (prefixes repeat); one in four arrives as three samples.
        std::vector<token_id> prompt(pick(1, 40));
        for (token_id& t : prompt) t = pick(3, 5);
        const int n_samples = pick(0, 3) == 0 ? 3 : 1;
        const std::uint64_t first = next_id;
        for (int i = 0; i < n_samples; ++i) {
          sequence s = test::make_sequence(next_id, static_cast<int>(prompt.size()), pick(1, 30));
          s.tokens = prompt;
          if (i > 0) s.fork_of = request_id{first};
          if (p.state.add(std::move(s))) live.insert(next_id);
          ++next_id;
        }
      }
      if (pick(0, 6) == 0 && !live.empty())
        p.state.request_finish(request_id{*std::next(live.begin(), pick(0, static_cast<int>(live.size()) - 1))},
                               finish_reason::cancelled);
      const step_plan plan = p.plan();
      ended(plan.finished);
      expect_sound(p, plan);
      if (HasFatalFailure()) return;
      if (plan.chunks.empty()) continue;
      std::vector<token_id> sampled;
      for (const step_chunk& c : plan.chunks)
        if (c.samples) sampled.push_back(pick(0, 19) == 0 ? 1 : pick(3, 5));  // 1 is a stop id
      ended(p.run(sampled).updates);
      ASSERT_EQ(p.blocks.find_invariant_violation(), std::nullopt);
    }
    EXPECT_TRUE(live.empty()) << live.size() << " sequences never ended in " << step << " steps";
    EXPECT_GT(n_ended, 500);
    EXPECT_GT(p.state.n_preemptions, 0u) << "the pool was meant to be too small to avoid preemption";
    EXPECT_GT(p.blocks.n_forks(), 0u);
    EXPECT_GT(p.blocks.n_block_copies(), 0u);
    if (prefix_caching) EXPECT_GT(p.blocks.prefix_hits(), 0u);
    EXPECT_EQ(p.blocks.n_blocks_free(), p.blocks.n_blocks_total());
    EXPECT_EQ(p.blocks.n_sequences(), 0);
  }
}

}  // namespace
}  // namespace pagedserve
