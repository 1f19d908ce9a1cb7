// The scheduling step's order and budgets: decodes first, chunked prefill under the token budget,
// the sequence cap, admission order across clients, stop rules, finishes at the step boundary.
#include <gtest/gtest.h>

#include "support/scheduling_harness.hpp"

namespace pagedserve {
namespace {

using test::make_sequence;
using test::scheduling;

TEST(schedule_step, long_prompt_is_chunked_under_the_token_budget_and_decodes_go_first) {
  scheduling p({8, 10, 512});
  p.state.add(make_sequence(1, 3, 5));
  auto s1 = p.plan().chunks;
  ASSERT_EQ(s1.size(), 1u);
  EXPECT_TRUE(s1[0].samples);
  p.run();

  p.state.add(make_sequence(2, 25, 5));  // 25-token prompt, budget 10
  auto s2 = p.plan().chunks;
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_EQ(s2[0].id, request_id{1});  // the decode comes first
  EXPECT_EQ(s2[0].n_tokens, 1);
  EXPECT_EQ(s2[1].id, request_id{2});
  EXPECT_EQ(s2[1].first, 0);
  EXPECT_EQ(s2[1].n_tokens, 9);
  EXPECT_FALSE(s2[1].samples);
  p.run();

  auto s3 = p.plan().chunks;
  ASSERT_EQ(s3.size(), 2u);
  EXPECT_EQ(s3[1].first, 9);
  EXPECT_EQ(s3[1].n_tokens, 9);
  p.run();
  auto s4 = p.plan().chunks;
  EXPECT_EQ(s4[1].first, 18);
  EXPECT_EQ(s4[1].n_tokens, 7);
  EXPECT_TRUE(s4[1].samples);
}

TEST(schedule_step, the_batch_maps_each_chunk_token_to_its_slot_in_the_final_block_tables) {
  scheduling p({8, 64, 512}, 64, 4);
  p.state.add(make_sequence(1, 6, 5));
  p.plan();
  p.run();
  p.state.add(make_sequence(2, 3, 5));
  const step_plan plan = p.plan();  // seq 1 decodes position 6, seq 2 prefills 0..2
  const step_batch& b = plan.batch;
  ASSERT_EQ(b.n_tokens(), 4);
  EXPECT_EQ(b.positions, (std::vector<std::int32_t>{6, 0, 1, 2}));
  EXPECT_EQ(b.seq_of_token, (std::vector<std::int32_t>{0, 1, 1, 1}));
  EXPECT_EQ(b.logits_rows, (std::vector<std::int32_t>{0, 3}));
  const auto& t1 = p.blocks.table(request_id{1});
  const auto& t2 = p.blocks.table(request_id{2});
  EXPECT_EQ(b.slots[0], t1[1].value * 4 + 2);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(b.slots[1 + i], t2[0].value * 4 + i);
  EXPECT_EQ(b.seq_block_offset, (std::vector<std::int32_t>{0, 2}));
  EXPECT_EQ(b.block_tables[2], t2[0].value);
}

TEST(schedule_step, sequence_cap_leaves_the_rest_waiting_in_order) {
  scheduling p({2, 100, 512});
  for (std::uint64_t i = 1; i <= 4; ++i) p.state.add(make_sequence(i, 2, 3));
  auto s = p.plan().chunks;
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].id, request_id{1});
  EXPECT_EQ(s[1].id, request_id{2});
  EXPECT_EQ(p.state.n_running(), 2);
  EXPECT_EQ(p.state.n_waiting(), 2);
}

TEST(schedule_step, max_tokens_and_stop_ids_finish_sequences_and_free_their_blocks) {
  scheduling p({8, 100, 512});
  p.state.add(make_sequence(1, 2, 2));
  p.state.add(make_sequence(2, 2, 10));
  auto three = make_sequence(3, 2, 10);
  std::const_pointer_cast<sampling_params>(three.params)->ignore_eos = true;
  p.state.add(three);
  p.plan();
  auto r = p.run({7, 2, 2});  // seq 2 and 3 sample EOS (2)
  ASSERT_EQ(r.updates.size(), 3u);
  EXPECT_FALSE(r.updates[0].finished);
  EXPECT_EQ(r.updates[1].finished, finish_reason::stop);
  EXPECT_FALSE(r.updates[2].finished) << "ignore_eos keeps going";
  EXPECT_EQ(r.freed.ids, std::vector<request_id>{request_id{2}});
  EXPECT_FALSE(p.blocks.has_sequence(request_id{2}));
  p.plan();
  r = p.run();
  EXPECT_EQ(r.updates[0].finished, finish_reason::length);
  EXPECT_EQ(r.updates[0].used.completion_tokens, 2);
  EXPECT_EQ(r.updates[0].used.prompt_tokens, 2);
  EXPECT_EQ(p.state.n_running(), 1);
  EXPECT_EQ(p.blocks.n_sequences(), 1);
}

TEST(schedule_step, finishes_apply_at_the_next_step_boundary_and_free_the_blocks) {
  scheduling p({8, 100, 512});
  p.state.add(make_sequence(1, 2, 50));
  p.state.add(make_sequence(2, 2, 50));
  p.plan();
  p.state.request_finish(request_id{1}, finish_reason::cancelled);
  p.run();
  EXPECT_TRUE(p.blocks.has_sequence(request_id{1})) << "the step in flight may still write its blocks";
  step_plan next = p.plan();
  ASSERT_EQ(next.finished.size(), 1u);
  EXPECT_EQ(next.finished[0].id, request_id{1});
  EXPECT_EQ(next.finished[0].finished, finish_reason::cancelled);
  EXPECT_EQ(next.finished[0].used.completion_tokens, 1);
  EXPECT_EQ(next.freed.ids, std::vector<request_id>{request_id{1}});
  EXPECT_FALSE(p.blocks.has_sequence(request_id{1}));
  ASSERT_EQ(next.chunks.size(), 1u);
  EXPECT_EQ(next.chunks[0].id, request_id{2});
  // Cancelling a waiting sequence removes it too; an unknown id is ignored.
  p.state.add(make_sequence(3, 2, 5));
  p.state.request_finish(request_id{3}, finish_reason::cancelled);
  p.state.request_finish(request_id{99}, finish_reason::cancelled);
  p.run();
  next = p.plan();
  ASSERT_EQ(next.finished.size(), 1u);
  EXPECT_EQ(next.finished[0].id, request_id{3});
  EXPECT_EQ(p.state.n_waiting(), 0);
  // The last one cancelled: every block is back.
  p.run();
  p.state.request_finish(request_id{2}, finish_reason::cancelled);
  next = p.plan();
  EXPECT_TRUE(next.chunks.empty());
  EXPECT_EQ(p.blocks.n_blocks_free(), p.blocks.n_blocks_total());
  EXPECT_EQ(p.blocks.find_invariant_violation(), std::nullopt);
}

TEST(schedule_step, a_full_waiting_queue_refuses_new_sequences) {
  scheduler_state s({8, 100, 512, 2});
  EXPECT_TRUE(s.add(make_sequence(1, 2, 5)));
  EXPECT_TRUE(s.add(make_sequence(2, 2, 5)));
  EXPECT_FALSE(s.add(make_sequence(3, 2, 5)));
  EXPECT_EQ(s.n_waiting(), 2);
}

TEST(schedule_step, admission_takes_turns_across_clients) {
  // Client 7 queued six requests before client 9 queued two; four slots. FIFO would give all four to
  // client 7; taking turns gives each client two, each client's own in queue order.
  scheduling p({4, 512, 512});
  auto of = [](std::uint64_t id, std::uint64_t client) {
    sequence s = make_sequence(id, 3, 5);
    s.client = client;
    return s;
  };
  for (std::uint64_t id = 1; id <= 6; ++id) p.state.add(of(id, 7));
  p.state.add(of(11, 9));
  p.state.add(of(12, 9));
  const auto s1 = p.plan().chunks;
  ASSERT_EQ(s1.size(), 4u);
  EXPECT_EQ(s1[0].id, request_id{1});
  EXPECT_EQ(s1[1].id, request_id{11});
  EXPECT_EQ(s1[2].id, request_id{2});
  EXPECT_EQ(s1[3].id, request_id{12});
  EXPECT_EQ(p.state.n_waiting(), 4);

  // A freed slot goes to the client with fewer running, even behind the other's queue: client 9's
  // first request ends, and client 3's newcomer gets the slot before client 7's queued requests.
  p.run();
  p.state.add(of(21, 3));
  p.state.request_finish(request_id{11}, finish_reason::cancelled);
  const step_plan s2 = p.plan();
  ASSERT_EQ(s2.finished.size(), 1u);
  ASSERT_EQ(s2.chunks.size(), 4u);  // three decodes, one admission
  EXPECT_EQ(s2.chunks[3].id, request_id{21});
  EXPECT_TRUE(s2.chunks[3].admitted);

  // Without clients (all 0) admission stays first come, first served.
  scheduling fifo({2, 512, 512});
  for (std::uint64_t id = 1; id <= 3; ++id) fifo.state.add(make_sequence(id, 3, 5));
  const auto f = fifo.plan().chunks;
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].id, request_id{1});
  EXPECT_EQ(f[1].id, request_id{2});
}

}  // namespace
}  // namespace pagedserve
