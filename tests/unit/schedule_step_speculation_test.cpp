// Speculative decoding in the scheduling step: proposals planned as verification chunks within the
// token budget and shrinking as the batch grows; accepted runs, rejections, stop tokens and
// max_tokens applied token by token; rejected rows' blocks rolled back and never in the prefix cache;
// and after 1000 random speculative requests with cancels over a small pool, the block manager's
// invariants hold after every step and every block comes back (also run under ASan and TSan).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "support/scheduling_harness.hpp"

namespace pagedserve {
namespace {

scheduler_limits speculative_limits(int num_speculative_tokens, int max_tokens_per_step = 64) {
  scheduler_limits l{8, max_tokens_per_step, 256, 2048, 0.0, 4};
  l.speculation.num_speculative_tokens = num_speculative_tokens;
  l.speculation.lookup_min = 1;
  l.speculation.lookup_max = 3;
  return l;
}

sequence repeating_sequence(std::uint64_t id, std::vector<token_id> prompt, int max_tokens) {
  sequence s = test::make_sequence(id, 1, max_tokens);
  s.tokens = std::move(prompt);
  s.n_prompt = static_cast<int>(s.tokens.size());
  return s;
}

// Runs the prompt's prefill; the model "samples" `next` after it.
void prefill(test::scheduling& p, token_id next) {
  p.plan();
  p.run({next});
}

TEST(schedule_step_speculation, proposes_what_followed_the_last_tokens_and_applies_the_accepted_run) {
  test::scheduling p(speculative_limits(4), 64, 4);
  // 3 4 5 6 7 8 3 4 | the model samples 5: n-gram lookup of "3 4 5" proposes 6 7 8 3.
  ASSERT_TRUE(p.state.add(repeating_sequence(1, {3, 4, 5, 6, 7, 8, 3, 4}, 50)));
  prefill(p, 5);
  const step_plan plan = p.plan();
  ASSERT_EQ(plan.chunks.size(), 1u);
  EXPECT_EQ(plan.chunks[0].proposed, (std::vector<token_id>{6, 7, 8, 3}));
  EXPECT_EQ(plan.chunks[0].n_tokens, 5);
  EXPECT_EQ(plan.batch.logits_rows.size(), 5u);  // every verified position is scored
  EXPECT_EQ(plan.batch.tokens, (std::vector<token_id>{5, 6, 7, 8, 3}));
  EXPECT_EQ(p.blocks.table(request_id{1}).size(), 4u);  // positions 8..12
  // 6 and 7 accepted, 9 replaces the rejected 8.
  const step_result r = p.run({6, 7, 9});
  ASSERT_EQ(r.updates.size(), 1u);
  EXPECT_EQ(r.updates[0].new_tokens, (std::vector<token_id>{6, 7, 9}));
  EXPECT_EQ(r.updates[0].n_proposed, 4);
  EXPECT_EQ(r.updates[0].n_accepted, 2);
  EXPECT_EQ(r.updates[0].used.spec_draft_tokens, 4);
  EXPECT_EQ(r.updates[0].used.spec_accepted_tokens, 2);
  const sequence& s = p.state.running.at(0);
  EXPECT_EQ(s.tokens, (std::vector<token_id>{3, 4, 5, 6, 7, 8, 3, 4, 5, 6, 7, 9}));
  EXPECT_EQ(s.n_computed, 11);  // K/V through the last accepted proposal
  // The block that held only a rejected row (position 12) went back to the pool.
  EXPECT_EQ(p.blocks.table(s.id).size(), 3u);
  EXPECT_EQ(p.blocks.n_blocks_free(), 61);
  EXPECT_EQ(p.blocks.find_invariant_violation(), std::nullopt);
}

TEST(schedule_step_speculation, stop_tokens_and_max_tokens_cut_an_accepted_run) {
  test::scheduling p(speculative_limits(4), 64, 4);
  ASSERT_TRUE(p.state.add(repeating_sequence(1, {3, 4, 5, 6, 1, 3, 4}, 50)));  // 1 is a stop id
  prefill(p, 5);
  ASSERT_EQ(p.plan().chunks[0].proposed, (std::vector<token_id>{6, 1, 3, 4}));
  step_result r = p.run({6, 1, 3, 4, 9});  // all accepted, but the run stops at 1
  EXPECT_EQ(r.updates[0].new_tokens, (std::vector<token_id>{6, 1}));
  EXPECT_EQ(r.updates[0].finished, finish_reason::stop);
  EXPECT_EQ(r.updates[0].n_sampled, 5);
  EXPECT_EQ(p.blocks.n_blocks_free(), 64);

  test::scheduling q(speculative_limits(4), 64, 4);
  ASSERT_TRUE(q.state.add(repeating_sequence(2, {3, 4, 5, 6, 7, 3, 4}, 3)));
  prefill(q, 5);
  // max_tokens 3, one generated: at most one proposal (the run then ends with a sampled token).
  EXPECT_EQ(q.plan().chunks[0].proposed, (std::vector<token_id>{6}));
  r = q.run({6, 7});
  EXPECT_EQ(r.updates[0].new_tokens, (std::vector<token_id>{6, 7}));
  EXPECT_EQ(r.updates[0].finished, finish_reason::length);
}

TEST(schedule_step_speculation, rejected_proposals_never_enter_the_prefix_cache) {
  test::scheduling p(speculative_limits(4), 64, 4, true);
  ASSERT_TRUE(p.state.add(repeating_sequence(1, {3, 4, 5, 6, 7, 3, 4}, 50)));
  prefill(p, 5);
  ASSERT_EQ(p.plan().chunks[0].proposed, (std::vector<token_id>{6, 7, 3, 4}));
  p.run({8});  // the first proposal rejected: the rows of 6 7 3 4 (positions 8..11) held rejected tokens
  p.state.request_finish(request_id{1}, finish_reason::cancelled);
  p.plan();
  // A prompt that continues with the rejected tokens finds only blocks 0 and 1 (3 4 5 6 | 7 3 4 5),
  // never block 2 with 6 7 3 4.
  const std::vector<token_id> probe{3, 4, 5, 6, 7, 3, 4, 5, 6, 7, 3, 4, 9};
  EXPECT_EQ(p.blocks.match_prefix(request_id{2}, probe, 0), 8);
  EXPECT_EQ(p.blocks.find_invariant_violation(), std::nullopt);
}

TEST(schedule_step_speculation, proposals_count_against_the_token_budget_and_shrink_as_the_batch_grows) {
  // A knee of 8 rows (the prior, before the cost model has learnt one): 1 decode gets 4 proposals,
  // 2 decodes 3 each, 4 decodes 1 each, 8 decodes none.
  speculation_limits l{4, 3, 1, 8, 0};
  const step_cost_model cost;
  EXPECT_EQ(speculation_per_sequence(l, cost, 1), 4);
  EXPECT_EQ(speculation_per_sequence(l, cost, 2), 3);
  EXPECT_EQ(speculation_per_sequence(l, cost, 4), 1);
  EXPECT_EQ(speculation_per_sequence(l, cost, 8), 0);
  // Learnt: 10 ms of weight streaming, 1 ms per token: the knee is at 10 rows.
  step_cost_model learnt;
  for (int i = 0; i < 50; ++i)
    for (int n : {1, 4, 16, 64}) learnt.observe(n, 0, 0.010 + 0.001 * n);
  ASSERT_TRUE(learnt.fitted());
  EXPECT_EQ(speculation_knee_rows(l, learnt), 10);
  EXPECT_EQ(speculation_per_sequence(l, learnt, 2), 4);
  EXPECT_EQ(speculation_per_sequence(l, learnt, 5), 1);

  // A step budget of 3 tokens: one decode takes one, its proposals only the two left.
  test::scheduling p(speculative_limits(4, 3), 64, 4);
  ASSERT_TRUE(p.state.add(repeating_sequence(1, {3, 4, 5, 6, 7, 3, 4}, 50)));
  p.plan();  // the prompt in chunks of 3; its last token is decoded, as the next step's decode
  p.run();
  p.plan();
  p.run();
  const step_plan plan = p.plan();
  ASSERT_EQ(plan.chunks.size(), 1u);
  EXPECT_EQ(plan.chunks[0].proposed, (std::vector<token_id>{5, 6}));
  EXPECT_EQ(plan.batch.n_tokens(), 3);
}

TEST(schedule_step_speculation, structured_output_requests_run_without_proposals) {
  test::scheduling p(speculative_limits(4), 64, 4);
  sequence s = repeating_sequence(1, {3, 4, 5, 6, 7, 3, 4}, 50);
  auto params = std::make_shared<sampling_params>(*s.params);
  params->format.type = output_format::kind::json_object;
  s.params = params;
  ASSERT_TRUE(p.state.add(std::move(s)));
  prefill(p, 5);
  EXPECT_TRUE(p.plan().chunks[0].proposed.empty());
}

// The executor's part: each sampling chunk accepts a random number of its proposals, then samples a
// token (a stop id now and then); tokens are drawn from a small alphabet so n-gram lookup hits.
std::vector<token_id> play_executor(const std::vector<step_chunk>& chunks, std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<token_id> sampled;
  for (const step_chunk& c : chunks) {
    if (!c.samples) continue;
    const int k = static_cast<int>(c.proposed.size());
    const int accepted = pick(0, k);
    sampled.insert(sampled.end(), c.proposed.begin(), c.proposed.begin() + accepted);
    token_id next = pick(0, 40) == 0 ? 1 : pick(3, 6);
    if (accepted < k && next == c.proposed[accepted]) next = next == 6 ? 3 : next + 1;  // a rejection differs
    sampled.push_back(next);
  }
  return sampled;
}

// A draft model's part: the plan's placeholders become random tokens from the alphabet.
void play_draft(std::vector<step_chunk>& scheduled, std::mt19937& rng) {
  std::vector<std::vector<token_id>> drafted;
  for (const step_chunk& c : scheduled) {
    if (!c.samples) continue;
    drafted.emplace_back(c.proposed.size());
    for (token_id& t : drafted.back()) t = std::uniform_int_distribution<int>(3, 6)(rng);
  }
  adopt_drafted_proposals(scheduled, drafted);
}

TEST(schedule_step_speculation, a_thousand_random_speculative_requests_with_cancels_keep_the_pool_sound) {
  for (const auto [prefix_caching, draft_model] : {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
    SCOPED_TRACE(prefix_caching ? "prefix caching" : "no prefix caching");
    SCOPED_TRACE(draft_model ? "draft model" : "n-gram");
    constexpr int block_size = 4, n_blocks = 40;
    scheduler_limits limits = speculative_limits(4, 24);
    limits.context_len = 64;
    limits.speculation.draft_model = draft_model;
    test::scheduling p(limits, n_blocks, block_size, prefix_caching);
    std::mt19937 rng(prefix_caching ? 3 : 17);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    std::set<std::uint64_t> live;
    std::uint64_t next_id = 1;
    int n_proposed = 0, n_accepted = 0;
    while (next_id <= 1000 || !live.empty()) {
      for (int a = pick(0, 2); a > 0 && next_id <= 1000; --a) {
        std::vector<token_id> prompt(pick(1, 20));
        for (token_id& t : prompt) t = pick(3, 6);
        if (p.state.add(repeating_sequence(next_id, std::move(prompt), pick(1, 40)))) live.insert(next_id);
        ++next_id;
      }
      if (!live.empty() && pick(0, 5) == 0) {  // a cancel
        auto it = live.begin();
        std::advance(it, pick(0, static_cast<int>(live.size()) - 1));
        p.state.request_finish(request_id{*it}, finish_reason::cancelled);
      }
      const step_plan plan = p.plan();
      ASSERT_EQ(p.blocks.find_invariant_violation(), std::nullopt);
      ASSERT_LE(plan.batch.n_tokens(), limits.max_num_batched_tokens);
      for (const sequence_update& u : plan.finished) live.erase(u.id.value);
      for (const step_chunk& c : plan.chunks)
        for (int pos = c.first; pos < c.first + c.n_tokens; ++pos) ASSERT_LT(pos, limits.context_len);
      if (draft_model) {
        for (const step_chunk& c : p.state.scheduled)  // placeholders, as many as allowed
          ASSERT_TRUE(std::ranges::all_of(c.proposed, [](token_id t) { return t == token_id{0}; }));
        play_draft(p.state.scheduled, rng);
      }
      const step_result r = p.run(play_executor(p.state.scheduled, rng));
      ASSERT_EQ(p.blocks.find_invariant_violation(), std::nullopt);
      ASSERT_TRUE(r.freed.faults.empty());
      for (const sequence_update& u : r.updates) {
        n_proposed += u.n_proposed;
        n_accepted += u.n_accepted;
        if (u.finished) live.erase(u.id.value);
        ASSERT_LE(u.used.completion_tokens, p.state.limits.context_len);
      }
      // A running sequence holds the blocks of its tokens and, between steps, none past them.
      for (const sequence& s : p.state.running)
        ASSERT_LE(static_cast<int>(p.blocks.table(s.id).size()), p.blocks.blocks_needed(static_cast<int>(s.tokens.size())));
    }
    EXPECT_GT(n_proposed, 1000);
    EXPECT_GT(n_accepted, 0);
    EXPECT_EQ(p.blocks.n_sequences(), 0);
    EXPECT_EQ(p.blocks.n_blocks_free(), n_blocks);
  }
}

}  // namespace
}  // namespace pagedserve
