// The scheduling policy alone: budgets, decode-first order, chunked prefill, preemption, stop rules.
#include <gtest/gtest.h>

#include "pagedserve/scheduler_policy.hpp"

namespace pagedserve {
namespace {

sequence make_seq(std::uint64_t id, int n_prompt, int max_tokens, bool ignore_eos = false) {
  sequence s;
  s.id = request_id{id};
  s.tokens.assign(n_prompt, 5);
  s.n_prompt = n_prompt;
  auto p = std::make_shared<sampling_params>();
  p->max_tokens = max_tokens;
  p->ignore_eos = ignore_eos;
  s.params = p;
  s.stop_ids = {1, 2};
  return s;
}

std::vector<step_chunk> plan(scheduler_policy& p) {
  std::vector<sequence_update> finished;
  auto out = p.plan_step(finished);
  EXPECT_TRUE(finished.empty());
  return out;
}

std::vector<token_id> one_sample_per_sampling_chunk(const std::vector<step_chunk>& pl, token_id t = 9) {
  std::vector<token_id> s;
  for (const auto& c : pl)
    if (c.samples) s.push_back(t);
  return s;
}

TEST(scheduler_policy, long_prompt_is_chunked_under_the_token_budget_and_decodes_go_first) {
  scheduler_policy p({8, 10, 512});
  p.add(make_seq(1, 3, 5));
  auto s1 = plan(p);
  ASSERT_EQ(s1.size(), 1u);
  EXPECT_TRUE(s1[0].samples);
  p.on_step_executed(s1, one_sample_per_sampling_chunk(s1));

  p.add(make_seq(2, 25, 5));  // 25-token prompt, budget 10
  auto s2 = plan(p);
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_EQ(s2[0].id, request_id{1});  // the decode comes first
  EXPECT_EQ(s2[0].n_tokens, 1);
  EXPECT_EQ(s2[1].id, request_id{2});
  EXPECT_EQ(s2[1].first, 0);
  EXPECT_EQ(s2[1].n_tokens, 9);
  EXPECT_FALSE(s2[1].samples);
  p.on_step_executed(s2, one_sample_per_sampling_chunk(s2));

  auto s3 = plan(p);
  ASSERT_EQ(s3.size(), 2u);
  EXPECT_EQ(s3[1].first, 9);
  EXPECT_EQ(s3[1].n_tokens, 9);
  p.on_step_executed(s3, one_sample_per_sampling_chunk(s3));
  auto s4 = plan(p);
  EXPECT_EQ(s4[1].first, 18);
  EXPECT_EQ(s4[1].n_tokens, 7);
  EXPECT_TRUE(s4[1].samples);
}

TEST(scheduler_policy, sequence_cap_leaves_the_rest_waiting_in_order) {
  scheduler_policy p({2, 100, 512});
  for (std::uint64_t i = 1; i <= 4; ++i) p.add(make_seq(i, 2, 3));
  auto s = plan(p);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].id, request_id{1});
  EXPECT_EQ(s[1].id, request_id{2});
  EXPECT_EQ(p.n_running(), 2);
  EXPECT_EQ(p.n_waiting(), 2);
}

TEST(scheduler_policy, max_tokens_and_stop_ids_finish_sequences) {
  scheduler_policy p({8, 100, 512});
  p.add(make_seq(1, 2, 2));
  p.add(make_seq(2, 2, 10));
  p.add(make_seq(3, 2, 10, /*ignore_eos=*/true));
  auto s = plan(p);
  auto u = p.on_step_executed(s, {7, 2, 2});  // seq 2 and 3 sample EOS (2)
  ASSERT_EQ(u.size(), 3u);
  EXPECT_FALSE(u[0].finished);
  EXPECT_EQ(u[1].finished, finish_reason::stop);
  EXPECT_FALSE(u[2].finished) << "ignore_eos keeps going";
  s = plan(p);
  u = p.on_step_executed(s, one_sample_per_sampling_chunk(s));
  EXPECT_EQ(u[0].finished, finish_reason::length);
  EXPECT_EQ(u[0].used.completion_tokens, 2);
  EXPECT_EQ(u[0].used.prompt_tokens, 2);
  EXPECT_EQ(p.n_running(), 1);
}

TEST(scheduler_policy, finish_requests_apply_at_the_next_step_boundary) {
  scheduler_policy p({8, 100, 512});
  p.add(make_seq(1, 2, 50));
  p.add(make_seq(2, 2, 50));
  auto s = plan(p);
  p.request_finish(request_id{1}, finish_reason::cancelled);
  p.on_step_executed(s, one_sample_per_sampling_chunk(s));
  std::vector<sequence_update> finished;
  auto next = p.plan_step(finished);
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].id, request_id{1});
  EXPECT_EQ(finished[0].finished, finish_reason::cancelled);
  EXPECT_EQ(finished[0].used.completion_tokens, 1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].id, request_id{2});
  // Cancelling a waiting sequence removes it too; an unknown id is ignored.
  p.add(make_seq(3, 2, 5));
  p.request_finish(request_id{3}, finish_reason::cancelled);
  p.request_finish(request_id{99}, finish_reason::cancelled);
  p.on_step_executed(next, one_sample_per_sampling_chunk(next));
  finished.clear();
  p.plan_step(finished);
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].id, request_id{3});
  EXPECT_EQ(p.n_waiting(), 0);
}

TEST(scheduler_policy, refused_admission_goes_back_to_the_front_of_the_queue) {
  scheduler_policy p({8, 100, 512});
  p.add(make_seq(1, 2, 5));
  p.add(make_seq(2, 2, 5));
  p.add(make_seq(3, 2, 5));
  auto s = plan(p);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(p.on_allocation_refused(s, 1), (std::vector<request_id>{request_id{3}, request_id{2}}));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(p.n_waiting(), 2);
  EXPECT_EQ(p.n_running(), 1);
  p.on_step_executed(s, one_sample_per_sampling_chunk(s));
  auto next = plan(p);
  ASSERT_EQ(next.size(), 3u);
  EXPECT_EQ(next[1].id, request_id{2}) << "FCFS order kept";
  EXPECT_EQ(next[2].id, request_id{3});
}

TEST(scheduler_policy, a_running_sequence_without_room_preempts_the_newest_for_recompute) {
  scheduler_policy p({8, 100, 512});
  p.add(make_seq(1, 4, 50));
  p.add(make_seq(2, 4, 50));
  auto s = plan(p);
  p.on_step_executed(s, one_sample_per_sampling_chunk(s));
  auto d = plan(p);  // two decodes
  ASSERT_EQ(d.size(), 2u);
  const auto to_free = p.on_allocation_refused(d, 0);
  EXPECT_EQ(to_free, std::vector<request_id>{request_id{2}}) << "the newest running sequence gives way";
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].id, request_id{1});
  EXPECT_EQ(p.n_preemptions(), 1u);
  p.on_step_executed(d, one_sample_per_sampling_chunk(d));
  // Readmitted, it recomputes prompt + generated tokens (4 + 1) and samples its next token.
  auto r = plan(p);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].id, request_id{2});
  EXPECT_EQ(r[1].first, 0);
  EXPECT_EQ(r[1].n_tokens, 5);
  EXPECT_TRUE(r[1].samples);
  const auto u = p.on_step_executed(r, one_sample_per_sampling_chunk(r));
  EXPECT_EQ(u[1].used.completion_tokens, 2) << "generated tokens survive preemption";
}

}  // namespace
}  // namespace pagedserve

namespace pagedserve {
namespace {

TEST(scheduler_policy, a_full_waiting_queue_refuses_new_sequences) {
  scheduler_limits limits{8, 100, 512, 2};
  scheduler_policy p(limits);
  EXPECT_TRUE(p.add(make_seq(1, 2, 5)));
  EXPECT_TRUE(p.add(make_seq(2, 2, 5)));
  EXPECT_FALSE(p.add(make_seq(3, 2, 5)));
  EXPECT_EQ(p.n_waiting(), 2);
}

TEST(scheduler_policy, admission_takes_turns_across_clients) {
  // Client 7 queued six requests before client 9 queued two; four slots. FIFO would give all four to
  // client 7; taking turns gives each client two, each client's own in queue order.
  scheduler_policy p({4, 512, 512});
  auto of = [](std::uint64_t id, std::uint64_t client) {
    sequence s = make_seq(id, 3, 5);
    s.client = client;
    return s;
  };
  for (std::uint64_t id = 1; id <= 6; ++id) p.add(of(id, 7));
  p.add(of(11, 9));
  p.add(of(12, 9));
  const auto s1 = plan(p);
  ASSERT_EQ(s1.size(), 4u);
  EXPECT_EQ(s1[0].id, request_id{1});
  EXPECT_EQ(s1[1].id, request_id{11});
  EXPECT_EQ(s1[2].id, request_id{2});
  EXPECT_EQ(s1[3].id, request_id{12});
  EXPECT_EQ(p.n_waiting(), 4);

  // A freed slot goes to the client with fewer running, even behind the other's queue: client 9's
  // first request ends, and client 3's newcomer gets the slot before client 7's queued requests.
  p.on_step_executed(s1, one_sample_per_sampling_chunk(s1));
  p.add(of(21, 3));
  p.request_finish(request_id{11}, finish_reason::cancelled);
  std::vector<sequence_update> finished;
  const auto s2 = p.plan_step(finished);
  ASSERT_EQ(finished.size(), 1u);
  ASSERT_EQ(s2.size(), 4u);  // three decodes, one admission
  EXPECT_EQ(s2[3].id, request_id{21});
  EXPECT_TRUE(s2[3].admitted);

  // Without clients (all 0) admission stays first come, first served.
  scheduler_policy fifo({2, 512, 512});
  for (std::uint64_t id = 1; id <= 3; ++id) fifo.add(make_seq(id, 3, 5));
  const auto f = plan(fifo);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].id, request_id{1});
  EXPECT_EQ(f[1].id, request_id{2});
}

}  // namespace
}  // namespace pagedserve
