// The scheduler and KV allocator actors on one io_context run by the test thread, with recording
// mailboxes in place of the executor and the request actors (the mailbox seam of actor.hpp): each
// engine step is exactly one exchange between them, preemption included, and messages that arrive
// while the scheduler's queues are lent to the allocator are handled, in order, once they are back.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <map>

#include "actors/kv_allocator_actor.hpp"
#include "actors/scheduler_actor.hpp"

namespace pagedserve {
namespace {

template <class Mailbox>
struct recording_mailbox : mailbox_ref<Mailbox> {
  void tell(Mailbox m) override { received.push_back(std::move(m)); }
  template <class T>
  int count() const {
    return static_cast<int>(std::ranges::count_if(received, [](const Mailbox& m) { return std::holds_alternative<T>(m); }));
  }
  std::vector<Mailbox> received;
};

// Records the type of each message and passes it on; while held, keeps them until release().
template <class Mailbox>
struct forwarding_mailbox : mailbox_ref<Mailbox> {
  explicit forwarding_mailbox(mailbox_ref<Mailbox>& to) : to_(to) {}
  void tell(Mailbox m) override {
    types.push_back(m.index());
    if (hold) held_.push_back(std::move(m));
    else to_.tell(std::move(m));
  }
  void release() {
    hold = false;
    for (Mailbox& m : held_) to_.tell(std::move(m));
    held_.clear();
  }
  std::vector<std::size_t> types;
  bool hold = false;

 private:
  mailbox_ref<Mailbox>& to_;
  std::vector<Mailbox> held_;
};

struct engine_core {
  // replies_apart: the scheduler's replies to request actors fan out on `network`, run only when the
  // test says so, as the network threads do in the server; else on `io` with everything else.
  explicit engine_core(int n_blocks, int block_size = 16, bool replies_apart = false)
      : kv(io.get_executor(), n_blocks, block_size, true),
        scheduler(io.get_executor(), replies_apart ? network.get_executor() : io.get_executor(), scheduler_limits{.max_num_seqs = 8, .max_num_batched_tokens = 64,
                                                      .context_len = n_blocks * block_size}),
        to_kv(kv),
        to_scheduler(scheduler) {
    kv.check_invariants_on_free(true);
    kv.connect(to_scheduler);
    scheduler.connect(to_kv, executor);
  }
  void submit(std::uint64_t id, int n_prompt, int max_tokens, std::optional<sample_group> group = std::nullopt) {
    auto params = std::make_shared<sampling_params>();
    params->max_tokens = max_tokens;
    auto reply = std::make_shared<recording_mailbox<request_mailbox>>();
    requests[id] = reply;
    scheduler.tell(submit_request{request_id{id}, group, 0, std::vector<token_id>(n_prompt, 5), params, {2}, reply,
                                  std::chrono::steady_clock::now(), 0});
  }
  void run() {
    io.restart();
    io.run();
  }
  // Plays the executor: answers the latest execute_step with `token` for every row.
  void execute_latest(token_id token = 9) {
    const auto& e = std::get<execute_step>(executor.received.back());
    scheduler.tell(step_executed{e.step, std::vector<token_id>(e.sample_for.size(), token),
                                 std::vector<std::optional<token_logprobs>>(e.sample_for.size()), 0.001});
  }
  int n_exchanges() const { return static_cast<int>(std::ranges::count(to_kv.types, std::size_t{0})); }  // schedule_next_step

  boost::asio::io_context io;
  boost::asio::io_context network;
  kv_allocator_actor kv;
  scheduler_actor scheduler;
  forwarding_mailbox<kv_allocator_mailbox> to_kv;
  forwarding_mailbox<scheduler_mailbox> to_scheduler;
  recording_mailbox<executor_mailbox> executor;
  std::map<std::uint64_t, std::shared_ptr<recording_mailbox<request_mailbox>>> requests;
};

TEST(scheduler_allocator_flow, each_step_is_one_exchange_then_one_execute) {
  engine_core c(64);
  c.submit(1, 3, 2);
  c.submit(2, 5, 2);
  c.io.run();
  // The first submit started an exchange; the second arrived while the queues were lent.
  ASSERT_EQ(c.executor.received.size(), 1u);
  EXPECT_EQ(std::get<execute_step>(c.executor.received[0]).sample_for, std::vector<request_id>{request_id{1}});
  EXPECT_EQ(std::get<execute_step>(c.executor.received[0]).started.size(), 1u);
  EXPECT_EQ(c.n_exchanges(), 1);
  for (int step = 2; step <= 3; ++step) {
    c.execute_latest();
    c.io.restart();
    c.io.run();
    EXPECT_EQ(c.n_exchanges(), step);
    EXPECT_EQ(c.executor.received.size(), static_cast<std::size_t>(step));
  }
  // Step 2 admitted seq 2 beside seq 1's decode; exchange 3 ended seq 1 (two tokens), so step 3 is
  // seq 2's decode and tells the executor to forget seq 1.
  EXPECT_EQ(c.requests[1]->count<tokens_generated>(), 2);
  EXPECT_EQ(c.requests[1]->count<request_finished>(), 1);
  EXPECT_EQ(std::get<execute_step>(c.executor.received.back()).dropped, std::vector<request_id>{request_id{1}});
  c.execute_latest();  // seq 2's second token: nothing left, and no execute follows
  c.io.restart();
  c.io.run();
  EXPECT_EQ(c.n_exchanges(), 4);
  EXPECT_EQ(c.executor.received.size(), 3u);
  EXPECT_EQ(c.requests[2]->count<request_finished>(), 1);
  // The allocator only ever answered exchanges.
  EXPECT_EQ(c.to_scheduler.types, std::vector<std::size_t>(4, scheduler_mailbox(step_scheduled{}).index()));
}

TEST(scheduler_allocator_flow, preemption_happens_inside_one_exchange) {
  engine_core c(3, 4);  // three blocks of 4 tokens
  c.submit(1, 4, 3);
  c.io.run();
  c.submit(2, 4, 3);
  c.execute_latest();
  c.io.restart();
  c.io.run();
  ASSERT_EQ(c.executor.received.size(), 2u);  // seq 1 decodes into its second block, seq 2 admitted
  c.execute_latest();
  c.io.restart();
  c.io.run();
  // Seq 2 needs a second block and none is free: the newest itself, it gave way in the same exchange.
  EXPECT_EQ(c.n_exchanges(), 3);
  const auto& third = std::get<execute_step>(c.executor.received.back());
  EXPECT_EQ(third.sample_for, std::vector<request_id>{request_id{1}});
  std::optional<scheduler_status> status;
  c.scheduler.tell(report_scheduler_status{[&](scheduler_status s) { status = s; }});
  c.io.restart();
  c.io.run();
  ASSERT_TRUE(status);
  EXPECT_EQ(status->preemptions, 1u);
  EXPECT_EQ(status->waiting, 1);
  while (c.requests[2]->count<request_finished>() == 0 && c.executor.received.size() < 20) {
    c.execute_latest();
    c.io.restart();
    c.io.run();
  }
  EXPECT_EQ(c.requests[1]->count<request_finished>(), 1);
  EXPECT_EQ(c.requests[2]->count<request_finished>(), 1);
  EXPECT_EQ(c.n_exchanges(), static_cast<int>(c.executor.received.size()) + 1);
}

TEST(scheduler_allocator_flow, messages_arriving_while_the_queues_are_lent_wait_for_them_in_order) {
  engine_core c(64);
  c.to_kv.hold = true;
  c.submit(1, 3, 5);
  c.io.run();  // the queues are lent: the exchange is held on its way to the allocator
  ASSERT_EQ(c.n_exchanges(), 1);
  c.submit(2, 3, 5);
  c.scheduler.tell(finish_request{request_id{2}, finish_reason::cancelled, std::nullopt});
  std::optional<scheduler_status> status;
  c.scheduler.tell(report_scheduler_status{[&](scheduler_status s) { status = s; }});
  c.io.restart();
  c.io.run();
  EXPECT_FALSE(status) << "the counts are read when the queues are back";
  c.to_kv.release();
  c.io.restart();
  c.io.run();
  ASSERT_TRUE(status);
  EXPECT_EQ(status->running, 1);
  EXPECT_EQ(status->waiting, 1) << "seq 2 was queued, its cancel waits for the step boundary";
  c.execute_latest();
  c.io.restart();
  c.io.run();
  EXPECT_EQ(c.requests[2]->count<request_finished>(), 1);
  EXPECT_EQ(c.requests[2]->count<tokens_generated>(), 0);
  EXPECT_EQ(std::get<request_finished>(c.requests[2]->received.back()).reason, finish_reason::cancelled);
}

// n samples of one prompt: the first is held until every other has reached the scheduler (submitted,
// or withdrawn by a request actor that ended first), so that all of them fork its prompt blocks.
TEST(scheduler_allocator_flow, a_sample_group_waits_for_all_its_members_then_forks_the_first) {
  engine_core c(64);
  const sample_group group{77, 3, nullptr};
  c.submit(1, 20, 4, group);
  c.run();
  EXPECT_TRUE(c.executor.received.empty()) << "two samples of the group are still to come";
  c.submit(2, 20, 4, group);
  c.run();
  EXPECT_TRUE(c.executor.received.empty());
  c.scheduler.tell(withdraw_sample{77, 3});  // the third ended before its submit (e.g. cancelled)
  c.run();
  ASSERT_EQ(c.executor.received.size(), 1u);
  EXPECT_EQ(std::get<execute_step>(c.executor.received[0]).sample_for, std::vector<request_id>{request_id{1}});
  while ((c.requests[1]->count<request_finished>() == 0 || c.requests[2]->count<request_finished>() == 0) &&
         c.executor.received.size() < 20) {
    c.execute_latest();
    c.run();
  }
  EXPECT_EQ(c.requests[2]->count<tokens_generated>(), 4);
  std::optional<kv_pool_status> kv;
  c.kv.tell(report_kv_status{[&](kv_pool_status s) { kv = s; }});
  c.run();
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->forks, 1u) << "the second sample shared the first's prompt blocks";
}

// A step's replies leave the engine thread as one batch, fanned out on the network executor: none
// reaches a request actor before that executor runs, and then each request hears its steps in order.
TEST(scheduler_allocator_flow, replies_fan_out_on_the_network_executor_in_step_order) {
  engine_core c(64, 16, true);
  c.submit(1, 3, 3);
  c.run();
  for (token_id t : {9, 10}) {
    c.execute_latest(t);
    c.run();
  }
  EXPECT_TRUE(c.requests[1]->received.empty()) << "the engine thread posts replies, it never tells them";
  EXPECT_EQ(c.executor.received.size(), 3u) << "the steps went on without waiting for the replies";
  c.network.run();
  ASSERT_EQ(c.requests[1]->received.size(), 2u);
  EXPECT_EQ(std::get<tokens_generated>(c.requests[1]->received[0]).tokens, std::vector<token_id>{9});
  EXPECT_EQ(std::get<tokens_generated>(c.requests[1]->received[1]).tokens, std::vector<token_id>{10});
}

// A cancel that arrives while the request's earlier tokens are still on their way to it: the step
// that was running when it came delivers its token, the request ends at that step's boundary with
// exactly one final message, after every token and after its blocks are free, and a second cancel
// (the client's, racing the server's end) changes nothing.
TEST(scheduler_allocator_flow, a_request_cancelled_while_its_replies_are_in_flight_gets_one_final_message_last) {
  engine_core c(64, 16, true);
  c.submit(1, 3, 10);
  c.run();
  c.execute_latest(9);
  c.run();  // step 2 is at the executor; step 1's token is on its way
  c.scheduler.tell(finish_request{request_id{1}, finish_reason::cancelled, std::nullopt});
  c.run();
  c.execute_latest(11);
  c.run();
  c.scheduler.tell(finish_request{request_id{1}, finish_reason::cancelled, std::nullopt});
  c.run();
  EXPECT_EQ(c.executor.received.size(), 2u) << "no step after the one the cancel arrived during";
  std::optional<kv_pool_status> kv;
  c.kv.tell(report_kv_status{[&](kv_pool_status s) { kv = s; }});
  c.run();
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->blocks_free, kv->blocks_total) << "freed before the final message went out";
  c.network.run();
  const auto& got = c.requests[1]->received;
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(std::get<tokens_generated>(got[0]).tokens, std::vector<token_id>{9});
  EXPECT_EQ(std::get<tokens_generated>(got[1]).tokens, std::vector<token_id>{11});
  ASSERT_TRUE(std::holds_alternative<request_finished>(got[2]));
  EXPECT_EQ(std::get<request_finished>(got[2]).reason, finish_reason::cancelled);
}

}  // namespace
}  // namespace pagedserve
