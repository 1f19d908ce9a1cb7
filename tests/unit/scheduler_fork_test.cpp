// Parallel sampling in the scheduling policy: a sample waits for the first sample of its prompt to
// compute the prompt, then is admitted as a fork recomputing only the prompt's last token.
#include <gtest/gtest.h>

#include "pagedserve/scheduler_policy.hpp"

namespace pagedserve {
namespace {

sequence sample(std::uint64_t id, int n_prompt, std::optional<std::uint64_t> fork_of = std::nullopt) {
  sequence s;
  s.id = request_id{id};
  s.tokens.assign(n_prompt, 7);
  s.n_prompt = n_prompt;
  auto p = std::make_shared<sampling_params>();
  p->max_tokens = 4;
  s.params = p;
  if (fork_of) s.fork_of = request_id{*fork_of};
  return s;
}

std::vector<step_chunk> plan(scheduler_policy& p) {
  std::vector<sequence_update> finished;
  return p.plan_step(finished);
}

std::vector<token_id> samples_for(const std::vector<step_chunk>& pl) {
  std::vector<token_id> s;
  for (const auto& c : pl)
    if (c.samples) s.push_back(9);
  return s;
}

TEST(scheduler_fork, samples_wait_for_the_prompt_then_fork_it_with_a_one_token_chunk) {
  scheduler_policy p({8, 16, 512});
  p.add(sample(1, 20));
  p.add(sample(2, 20, 1));
  p.add(sample(3, 20, 1));
  p.add(sample(4, 3));  // an unrelated request behind them is not held up

  auto s1 = plan(p);  // 16 of the 20 prompt tokens; the samples wait
  ASSERT_EQ(s1.size(), 1u);
  EXPECT_EQ(s1[0].n_tokens, 16);
  p.on_step_executed(s1, samples_for(s1));

  auto s2 = plan(p);  // the rest of the prompt; the samples still wait, request 4 goes ahead
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_EQ(s2[0].id, request_id{1});
  EXPECT_TRUE(s2[0].samples);
  EXPECT_EQ(s2[1].id, request_id{4});
  EXPECT_EQ(p.n_waiting(), 2);
  p.on_step_executed(s2, samples_for(s2));

  auto s3 = plan(p);  // decodes of 1 and 4, then both samples forked from 1
  ASSERT_EQ(s3.size(), 4u);
  for (int i : {2, 3}) {
    EXPECT_TRUE(s3[i].admitted);
    EXPECT_EQ(s3[i].fork_from, request_id{1});
    EXPECT_EQ(s3[i].first, 19);
    EXPECT_EQ(s3[i].n_tokens, 1);
    EXPECT_TRUE(s3[i].samples);
  }
  const auto updates = p.on_step_executed(s3, samples_for(s3));
  EXPECT_EQ(p.find(request_id{2})->n_generated(), 1);
  EXPECT_EQ(p.find(request_id{2})->n_computed, 20);
}

TEST(scheduler_fork, a_sample_whose_first_sample_is_gone_computes_the_prompt_itself) {
  scheduler_policy p({8, 64, 512});
  p.add(sample(1, 20));
  p.add(sample(2, 20, 1));
  auto s1 = plan(p);
  ASSERT_EQ(s1.size(), 1u);
  p.request_finish(request_id{1}, finish_reason::cancelled);
  std::vector<sequence_update> finished;
  auto s2 = p.plan_step(finished);
  ASSERT_EQ(finished.size(), 1u);
  ASSERT_EQ(s2.size(), 1u);
  EXPECT_EQ(s2[0].id, request_id{2});
  EXPECT_FALSE(s2[0].fork_from);
  EXPECT_EQ(s2[0].first, 0);
  EXPECT_EQ(s2[0].n_tokens, 20);
}

TEST(scheduler_fork, only_the_same_prompt_is_forked) {
  scheduler_policy p({8, 64, 512});
  p.add(sample(1, 20));
  p.add(sample(2, 21, 1));  // a different prompt under the same group: computed on its own
  auto s1 = plan(p);
  ASSERT_EQ(s1.size(), 1u);
  p.on_step_executed(s1, samples_for(s1));
  auto s2 = plan(p);
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_FALSE(s2[1].fork_from);
  EXPECT_EQ(s2[1].first, 0);
}

TEST(scheduler_fork, a_refused_fork_goes_back_to_wait_and_forks_again) {
  scheduler_policy p({8, 64, 512});
  p.add(sample(1, 20));
  p.add(sample(2, 20, 1));
  auto s1 = plan(p);
  p.on_step_executed(s1, samples_for(s1));
  auto s2 = plan(p);
  ASSERT_EQ(s2.size(), 2u);
  ASSERT_TRUE(s2[1].fork_from);
  EXPECT_EQ(p.on_allocation_refused(s2, 1), std::vector<request_id>{request_id{2}});
  EXPECT_EQ(p.n_waiting(), 1);
  p.on_step_executed(s2, samples_for(s2));
  auto s3 = plan(p);
  ASSERT_EQ(s3.size(), 2u);
  EXPECT_EQ(s3[1].fork_from, request_id{1});
  EXPECT_EQ(s3[1].first, 19);
}

}  // namespace
}  // namespace pagedserve
