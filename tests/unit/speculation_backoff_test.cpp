// The per-sequence cut-off of speculative proposals: the break-even acceptance from the step cost,
// a cut-off once recent acceptance falls below it, a back-off that doubles with each cut-off and
// resets once proposals pay again; and in the scheduling step, a sequence whose proposals keep being
// rejected stops proposing, then proposes again after the back-off.
#include <gtest/gtest.h>

#include "sched/speculation_backoff.hpp"
#include "sched/step_cost_model.hpp"
#include "support/scheduling_harness.hpp"

namespace pagedserve {
namespace {

TEST(speculation_backoff, break_even_follows_the_knee_and_the_batch) {
  speculation_limits l{4, 3, 1, 8, 0};
  const step_cost_model unfitted;
  EXPECT_DOUBLE_EQ(speculation_break_even(l, unfitted, 1), 1.0 / 9);   // knee 8 rows: rows are cheap
  EXPECT_DOUBLE_EQ(speculation_break_even(l, unfitted, 8), 1.0 / 2);   // the weights shared by 8 decodes
  step_cost_model learnt;  // 1 ms streaming, 1 ms a token: knee 1, rows cost what they may save
  for (int i = 0; i < 50; ++i)
    for (int n : {1, 4, 16, 64}) learnt.observe(n, 0, 0.001 + 0.001 * n);
  ASSERT_TRUE(learnt.fitted());
  EXPECT_NEAR(speculation_break_even(l, learnt, 1), 0.5, 1e-6);
  // A draft model a tenth of the target's size: its 5 passes for 4 proposals add 0.125.
  l.draft_model = true;
  l.draft_cost = 0.1;
  EXPECT_NEAR(speculation_break_even(l, learnt, 1), 0.625, 1e-6);
  l.draft_cost = 1.0;  // as large as the target: never pays
  EXPECT_DOUBLE_EQ(speculation_break_even(l, learnt, 1), 1.0);
}

TEST(speculation_backoff, low_acceptance_cuts_proposals_off_with_a_doubling_back_off) {
  speculation_record r;
  EXPECT_TRUE(speculation_may_propose(r, 0));
  speculation_observe(r, 2, 0, 0.3, 10);  // 2 proposed: not enough evidence yet
  EXPECT_TRUE(speculation_may_propose(r, 10));
  speculation_observe(r, 4, 1, 0.3, 11);  // 1 of 5.6 decayed, below 0.3: cut off for 32 tokens
  EXPECT_FALSE(speculation_may_propose(r, 42));
  EXPECT_TRUE(speculation_may_propose(r, 43));
  speculation_observe(r, 4, 1, 0.3, 43);  // one verification is evidence enough: cut again, 64 tokens
  EXPECT_FALSE(speculation_may_propose(r, 106));
  EXPECT_TRUE(speculation_may_propose(r, 107));
  for (int i = 0; i < 10; ++i) speculation_observe(r, 4, 0, 0.3, r.resume_at);  // the back-off stops at 256
  EXPECT_EQ(r.n_cutoffs, 12);
  const int at = r.resume_at;
  speculation_observe(r, 4, 0, 0.3, at);
  EXPECT_EQ(r.resume_at, at + 256);
}

TEST(speculation_backoff, acceptance_above_break_even_keeps_proposing_and_resets_the_back_off) {
  speculation_record r;
  for (int i = 0; i < 20; ++i) speculation_observe(r, 4, 2, 0.3, i);
  EXPECT_TRUE(speculation_may_propose(r, 20));
  r.n_cutoffs = 3;
  speculation_observe(r, 4, 4, 0.3, 21);
  EXPECT_EQ(r.n_cutoffs, 0);
  EXPECT_TRUE(speculation_may_propose(r, 21));
}

TEST(speculation_backoff, a_sequence_whose_proposals_are_rejected_stops_proposing_then_retries) {
  // A fixed knee of 5 rows: one decode verifies 4 proposals, break-even 1/6.
  scheduler_limits limits{8, 64, 512, 2048, 0.0, 4};
  limits.speculation = {4, 3, 1, 32, 5};
  test::scheduling p(limits, 64, 4);
  sequence s = test::make_sequence(1, 1, 400);
  s.tokens = {7, 8, 7, 8};
  s.n_prompt = 4;
  ASSERT_TRUE(p.state.add(std::move(s)));
  p.plan();
  p.run({7});
  std::vector<int> verifying_steps;
  for (int step = 0; step < 40; ++step) {
    const step_plan plan = p.plan();
    ASSERT_EQ(plan.chunks.size(), 1u);
    const std::vector<token_id>& proposed = plan.chunks[0].proposed;
    if (!proposed.empty()) verifying_steps.push_back(step);
    // The target never agrees with the first proposal (and every lookup finds a 7 or an 8 before).
    p.run({proposed.empty() || proposed[0] == 8 ? token_id{7} : token_id{8}});
  }
  // Verifications until the decayed evidence reaches 4 proposed tokens (the first lookups find
  // fewer than 4), none accepted: a back-off of 32 generated tokens, one more verification, then 64.
  EXPECT_EQ(verifying_steps, (std::vector<int>{0, 1, 34}));
  EXPECT_EQ(p.blocks.find_invariant_violation(), std::nullopt);
}

}  // namespace
}  // namespace pagedserve
