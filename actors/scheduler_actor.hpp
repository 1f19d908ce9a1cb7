#pragma once
// SchedulerActor: the message shell around one engine step. It owns the scheduler's queues
// (scheduler_state) and everything request-facing (reply addresses, errors, sample groups, what the
// executor knows); the step's logic is schedule_step / apply_step_result (pagedserve/schedule_step.hpp),
// which the KvAllocatorActor runs over the queues lent to it and its block manager. A step goes
//   schedule_next_step (to KvAllocator, with the queues and the last step's samples)
//   -> step_scheduled (queues back, updates, plan) -> execute_step (Executor) -> step_executed
// and the updates go out to the request actors; then the next exchange starts.
//
// Mailbox: submit_request, finish_request, withdraw_sample (request actors); finish_all (shutdown); step_scheduled
//          (KvAllocator); step_executed (Executor); report_scheduler_status (network edge).
// While the queues are lent (one exchange), messages that need them wait, in arrival order, and are
// handled when the queues come back.
// A request ended with an error (finish_request with one, or finish_all) gets request_failed instead
// of request_finished; after finish_all every submit_request is refused with its error.
// Replies request_rejected at once when the waiting queue is full. Samples of one prompt (n > 1) are
// tied to the first of them to arrive, whose prompt blocks they fork once it has computed them.
// Replies: tokens_generated / request_finished to each request's reply_to, always after the exchange
//          that freed the finished sequences' blocks (so /health after `done` sees them free). A step's
//          replies leave as one batch, posted to a strand on the replies executor (the network
//          io_context) that tells each request actor: the engine thread posts once per step instead of
//          once per request (~1.5 us of its CPU each, the largest of its costs between two steps at 64
//          streams: docs/per-token-path.md), and the strand keeps each request's messages in step order.
#include <boost/asio/strand.hpp>
#include <spdlog/logger.h>

#include <optional>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "actors/messages.hpp"
#include "actors/status_board.hpp"
#include "metrics/metrics.hpp"
#include "sched/scheduler_state.hpp"

namespace pagedserve {

class scheduler_actor : public actor<scheduler_actor, scheduler_mailbox> {
 public:
  // replies_ex: where the replies to request actors fan out (theirs: the network io_context).
  // seed: where the seeds of requests that bring none come from (engine.seed); none = drawn at random.
  scheduler_actor(const boost::asio::any_io_executor& ex, const boost::asio::any_io_executor& replies_ex,
                  scheduler_limits limits, std::optional<std::uint64_t> seed = std::nullopt);
  void connect(mailbox_ref<kv_allocator_mailbox>& kv, mailbox_ref<executor_mailbox>& executor,
               serving_metrics* metrics = nullptr) {
    kv_ = &kv;
    executor_ = &executor;
    metrics_ = metrics;
  }

  void on(submit_request m);
  void on(finish_request m);
  void on(withdraw_sample m);
  void on(finish_all m);
  void on(step_scheduled m);
  void on(step_executed m);
  void on(report_scheduler_status m);
  // Publishes the queues' figures to board whenever they change (the network edge reads it there).
  void publish_to(status_board& board) { board_ = &board; }

 private:
  scheduler_status queue_status() const;
  // To the board, when the queues are here (not lent).
  void publish_status();
  // Starts an exchange unless one is under way or a step is executing.
  void start_step_if_idle();
  void send_schedule(std::optional<schedule_next_step::executed> previous, bool follows_step);
  void execute(step_plan& plan);  // takes the plan's batch
  // A message for one request actor, in a step's batch of replies.
  struct addressed_reply {
    std::shared_ptr<mailbox_ref<request_mailbox>> to;
    request_mailbox message;
  };
  // Appends the updates' tokens and final messages to `replies`; forgets the finished requests.
  void deliver(std::vector<sequence_update>& updates, std::vector<std::optional<token_logprobs>> logprobs,
               std::vector<addressed_reply>& replies);
  // One post to replies_, which tells each request actor its messages in order.
  void send_replies(std::vector<addressed_reply> replies);
  // Keeps a message that needs the queues while they are lent; true if it was kept.
  template <class Message>
  bool defer_while_lent(Message& m) {
    if (state_) return false;
    deferred_.emplace_back(std::move(m));
    return true;
  }

  std::unique_ptr<scheduler_state> state_;  // null while lent to the allocator
  boost::asio::strand<boost::asio::any_io_executor> replies_;  // where a step's replies fan out
  mailbox_ref<kv_allocator_mailbox>* kv_ = nullptr;
  mailbox_ref<executor_mailbox>* executor_ = nullptr;
  status_board* board_ = nullptr;
  serving_metrics* metrics_ = nullptr;  // queue time (null in tests that need no metrics)

  bool executing_ = false;     // a step is at the executor
  bool step_follows_ = false;  // the exchange under way started the moment the previous step ended
  step_id step_{0};            // of the latest exchange (and the step it planned)
  std::uint64_t n_steps_ = 0;  // steps sent to the executor
  std::vector<scheduler_mailbox> deferred_;  // arrived while the queues were lent
  std::vector<std::optional<token_logprobs>> executed_logprobs_;  // of the executed step, until delivered
  std::unordered_map<request_id, std::shared_ptr<mailbox_ref<request_mailbox>>> reply_to_;
  std::unordered_map<request_id, std::chrono::steady_clock::time_point> never_scheduled_;  // arrival times
  std::unordered_set<request_id> known_to_executor_;
  std::unordered_map<request_id, request_error> ending_with_error_;  // finish pending, final is request_failed
  std::optional<request_error> closed_;  // finish_all came: new submissions get this error
  std::vector<request_id> dropped_;  // finished sequences the executor may forget, sent with the next step
  // Sample groups (n > 1) still expecting members: the first member's id and how many are to come.
  // The first member is held back from admission until none is to come, so that every other member
  // forks it: a member arriving after the first had already finished would compute the prompt again.
  struct open_group {
    std::optional<request_id> first;
    int to_come = 0;
  };
  // One member of group `key` (of `size`) reached the scheduler (submitted, or withdrawn before it could
  // be). Returns the member it should fork, if another came first.
  std::optional<request_id> count_group_member(std::uint64_t key, int size, std::optional<request_id> member);
  std::unordered_map<std::uint64_t, open_group> groups_;
  std::mt19937_64 seed_source_{std::random_device{}()};
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace pagedserve
