// The learnt step cost and the prefill allowance it gives the scheduler.
#include <gtest/gtest.h>

#include "sched/schedule_step.hpp"
#include "sched/step_budget.hpp"
#include "sched/step_cost_model.hpp"

#include <cmath>

namespace pagedserve {
namespace {

TEST(step_cost_model, recovers_fixed_and_per_token_cost_from_varied_steps) {
  step_cost_model m;
  EXPECT_FALSE(m.fitted());
  for (int i = 0; i < 40; ++i) {
    const int n = 1 + (i * 37) % 200;
    m.observe(n, 0, 0.010 + 0.0005 * n);
  }
  ASSERT_TRUE(m.fitted());
  EXPECT_NEAR(m.fixed_seconds(), 0.010, 1e-9);
  EXPECT_NEAR(m.per_unit_seconds(), 0.0005, 1e-12);
  EXPECT_NEAR(m.predict(16), 0.018, 1e-9);
}

TEST(step_cost_model, steps_of_one_size_cannot_separate_the_two_costs) {
  step_cost_model m;
  for (int i = 0; i < 40; ++i) m.observe(16, 0, 0.02);
  EXPECT_FALSE(m.fitted());
}

TEST(step_cost_model, forgets_old_steps_as_the_machine_changes) {
  step_cost_model m(0.9);
  for (int i = 0; i < 100; ++i) m.observe(1 + i % 50, 0, 0.010 + 0.001 * (1 + i % 50));
  for (int i = 0; i < 200; ++i) m.observe(1 + i % 50, 0, 0.020 + 0.002 * (1 + i % 50));
  EXPECT_NEAR(m.per_unit_seconds(), 0.002, 1e-4);
  EXPECT_NEAR(m.fixed_seconds(), 0.020, 2e-3);
}

TEST(step_cost_model, learns_what_attention_costs_apart_from_tokens) {
  step_cost_model m(0.0001);  // the prior underestimates attention 50x
  for (int i = 0; i < 60; ++i) {
    const double tokens = 16 + (i * 37) % 120, positions = 2000 + (i * 7919) % 40000;
    m.observe(tokens, positions, 0.010 + 0.001 * tokens + 0.000005 * positions);
  }
  ASSERT_TRUE(m.fitted());
  EXPECT_NEAR(m.per_unit_seconds(), 0.001, 1e-9);
  EXPECT_NEAR(m.attention_ratio(), 0.005, 1e-9);
  EXPECT_NEAR(m.fixed_seconds(), 0.010, 1e-9);
}

TEST(step_cost_model, keeps_the_prior_while_tokens_and_positions_move_together) {
  step_cost_model m(0.01);
  for (int i = 0; i < 40; ++i) {
    const double tokens = 1 + (i * 37) % 200;
    m.observe(tokens, 10 * tokens, 0.010 + 0.002 * tokens);  // positions proportional to tokens
  }
  ASSERT_TRUE(m.fitted());
  EXPECT_DOUBLE_EQ(m.attention_ratio(), 0.01);
  EXPECT_NEAR(m.predict(100 + 0.01 * 1000), 0.010 + 0.002 * 100, 1e-9);
}

sequence waiting_seq(std::uint64_t id, int n_prompt) {
  sequence s;
  s.id = request_id{id};
  s.tokens.assign(n_prompt, 3);
  s.n_prompt = n_prompt;
  auto p = std::make_shared<sampling_params>();
  p->max_tokens = 1000;
  p->ignore_eos = true;
  s.params = p;
  return s;
}

// 10 ms per step plus 1 ms per token (no attention cost in these limits).
void feed(step_cost_model& cost) {
  for (int i = 0; i < 20; ++i) {
    const int n = 1 + i * 7;
    observe_step_time(cost, {step_chunk{request_id{1}, 0, n, true, false, std::nullopt, {}}}, 0.010 + 0.001 * n);
  }
}

TEST(scheduler_slowdown_bound, prefill_work_is_bounded_so_a_step_with_decodes_takes_at_most_twice_as_long) {
  const scheduler_limits bounded{64, 512, 4096, 1024, 2.0, 16};
  step_cost_model cost;
  feed(cost);
  // 16 decodes alone: 26 ms; twice that leaves 26 tokens of prefill.
  EXPECT_NEAR(prefill_work_allowance(bounded, cost, 16, true), 26.0, 1e-6);
  EXPECT_TRUE(std::isinf(prefill_work_allowance(bounded, cost, 0, false))) << "no decode to protect: only the token budget";
  const scheduler_limits unbounded{64, 512, 4096, 1024, 0.0, 16};
  EXPECT_TRUE(std::isinf(prefill_work_allowance(unbounded, cost, 16, true)));
}

// The scheduler's loop on a machine where a chunk costs more than linearly (as a chunk's attention
// does): 10 ms per step, 1 ms per decode, 1 ms per prefill token plus 0.002 ms * tokens^2. Steps of
// 16 decodes, mostly with a long prompt's chunk sized by the allowance. The line fitted through
// both kinds of step still holds the bound: steps with a chunk settle at 2x the decodes alone.
TEST(scheduler_slowdown_bound, holds_when_chunks_cost_more_than_linearly) {
  const scheduler_limits limits{64, 512, 4096, 1024, 2.0, 16};
  step_cost_model cost;
  auto seconds = [](int prefill) { return 0.010 + 0.001 * 16 + 0.001 * prefill + 0.000002 * prefill * prefill; };
  auto plan = [](int prefill) {
    std::vector<step_chunk> plan;
    for (std::uint64_t i = 0; i < 16; ++i) plan.push_back({request_id{i}, 100, 1, true, false, std::nullopt});
    if (prefill > 0) plan.push_back({request_id{99}, 0, prefill, false, false, std::nullopt});
    return plan;
  };
  for (int i = 0; i < 40; ++i) {  // short prompts of varied size beside the decodes
    const int prefill = i % 2 ? 0 : 4 + (i * 13) % 60;
    observe_step_time(cost, plan(prefill), seconds(prefill));
  }
  double ratio = 0;
  for (int i = 0; i < 300; ++i) {
    int prefill = 0;
    if (i % 4) {
      const double allowance = prefill_work_allowance(limits, cost, step_work(cost, plan(0)), true);
      while (chunk_work(cost, 0, prefill + 1) <= allowance) ++prefill;
    }
    observe_step_time(cost, plan(prefill), seconds(prefill));
    if (prefill > 0) ratio = seconds(prefill) / seconds(0);
  }
  EXPECT_LE(ratio, 2.0 * 1.02);
  EXPECT_GE(ratio, 2.0 * 0.9) << "the bound must not starve the prefill";
}

// A long prompt's chunks beside 16 decodes on a machine where attention costs 5x what the prior
// says (measured so with int8 VNNI matmuls and fp32 attention): the learnt ratio keeps every step
// with a chunk within the bound as the prompt's attended context grows to 2000 positions (sized by
// the prior, chunks there took 4x the decode-only step).
TEST(scheduler_slowdown_bound, holds_deep_in_a_long_prompt_when_attention_costs_more_than_the_prior) {
  const double prior = 0.0002, true_ratio = 0.001;
  const scheduler_limits limits{64, 512, 4096, 1024, 2.0, 16, prior};
  step_cost_model cost(prior);
  auto seconds = [&](const std::vector<step_chunk>& plan) {
    double t = 0.030;  // streaming the weights: most of a decode-only step, as measured
    for (const step_chunk& c : plan) t += 0.001 * (c.n_tokens + true_ratio * attended_positions(c.first, c.n_tokens));
    return t;
  };
  std::vector<step_chunk> decodes;
  for (std::uint64_t i = 0; i < 16; ++i) decodes.push_back({request_id{i}, 300, 1, true, false, std::nullopt});
  for (int i = 0; i < 40; ++i) {  // decodes, some steps with short prompts of varied size at varied depth
    std::vector<step_chunk> plan = decodes;
    for (step_chunk& c : plan) c.first = 300 + i;
    if (i % 2) plan.push_back({request_id{99}, (i * 53) % 300, 8 + (i * 13) % 60, false, false, std::nullopt});
    observe_step_time(cost, plan, seconds(plan));
  }
  double worst = 0;
  for (int first = 0; first < 2000;) {
    std::vector<step_chunk> plan = decodes;
    const double decode_seconds = seconds(plan);
    double allowance = prefill_work_allowance(limits, cost, step_work(cost, plan), true);
    int n = 0;
    while (n < 512 && chunk_work(cost, first, n + 1) <= allowance) ++n;
    n = std::max(n, 16);
    plan.push_back({request_id{99}, first, n, false, false, std::nullopt});
    worst = std::max(worst, seconds(plan) / decode_seconds);
    observe_step_time(cost, plan, seconds(plan));
    observe_step_time(cost, decodes, decode_seconds);
    first += n;
  }
  EXPECT_LE(worst, 2.0 * 1.05);
  EXPECT_NEAR(cost.attention_ratio(), true_ratio, 1e-6);
}

TEST(scheduler_slowdown_bound, attention_counts_the_positions_each_token_attends_over) {
  const step_cost_model cost(0.01);
  EXPECT_DOUBLE_EQ(chunk_work(cost, 0, 1), 1 + 0.01 * 1);
  EXPECT_DOUBLE_EQ(chunk_work(cost, 100, 10), 10 + 0.01 * (101 + 102 + 103 + 104 + 105 + 106 + 107 + 108 + 109 + 110));
}

// The whole step: scheduler_state and a block manager large enough never to refuse.
struct big_pool_step {
  explicit big_pool_step(scheduler_limits limits) : state(limits) {}
  scheduler_state state;
  block_manager blocks{1024, 16, false};
};

TEST(scheduler_slowdown_bound, a_long_prompt_arriving_beside_16_decodes_is_chunked_to_the_allowance) {
  big_pool_step p({64, 512, 4096, 1024, 2.0, 16});
  for (std::uint64_t i = 0; i < 16; ++i) p.state.add(waiting_seq(i, 4));
  auto first = schedule_step(p.state, p.blocks);  // 16 short prompts, no decodes yet: not bounded
  ASSERT_EQ(first.chunks.size(), 16u);
  apply_step_result(p.state, p.blocks, std::vector<token_id>(16, 9), 0);
  feed(p.state.cost);
  p.state.add(waiting_seq(100, 2000));
  const auto step = schedule_step(p.state, p.blocks).chunks;
  ASSERT_EQ(step.size(), 17u);
  int decode_tokens = 0;
  for (std::size_t i = 0; i < 16; ++i) decode_tokens += step[i].n_tokens;
  EXPECT_EQ(decode_tokens, 16);
  EXPECT_EQ(step[16].id, request_id{100});
  EXPECT_EQ(step[16].n_tokens, 26);
}

TEST(scheduler_slowdown_bound, deep_in_a_long_prompt_chunks_shrink_as_attention_grows_and_never_below_the_floor) {
  big_pool_step p({64, 512, 8192, 1024, 5.0, 16, 0.001});  // 44 units of prefill a step
  p.state.add(waiting_seq(1, 2));
  schedule_step(p.state, p.blocks);
  apply_step_result(p.state, p.blocks, {9}, 0);  // one decoding stream
  feed(p.state.cost);
  p.state.add(waiting_seq(2, 6000));
  std::vector<int> chunks;
  for (int step = 0; step < 400 && p.state.find(request_id{2})->n_computed < 6000; ++step) {
    const auto plan = schedule_step(p.state, p.blocks).chunks;
    ASSERT_EQ(plan.size(), 2u);
    chunks.push_back(plan[1].n_tokens);
    std::vector<token_id> sampled = {9};
    if (plan[1].samples) sampled.push_back(9);
    apply_step_result(p.state, p.blocks, sampled, 0);
  }
  ASSERT_GT(chunks.size(), 3u);
  EXPECT_GT(chunks.front(), chunks[chunks.size() - 2]) << "later chunks attend over more positions";
  for (std::size_t i = 0; i + 1 < chunks.size(); ++i) EXPECT_GE(chunks[i], 16);  // the last one is what was left
}

}  // namespace
}  // namespace pagedserve
