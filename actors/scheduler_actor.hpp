#pragma once
// SchedulerActor: drives scheduler_policy one engine step at a time. A step goes
//   plan -> allocate_step (KvAllocator) -> step_allocated -> execute_step (Executor) -> step_executed
// and its results go out to the request actors; then the next step is planned.
//
// Mailbox: submit_request, finish_request (request actors); finish_all (shutdown); step_allocated
//          (KvAllocator); step_executed (Executor); report_scheduler_status (network edge).
// A request ended with an error (finish_request with one, or finish_all) gets request_failed instead
// of request_finished; after finish_all every submit_request is refused with its error.
// Replies request_rejected at once when the waiting queue is full. Samples of one prompt (n > 1) are
// tied to the first of them to arrive, whose prompt blocks they fork once it has computed them.
// Replies: tokens_generated / request_finished to each request's reply_to; free_sequences to the
//          allocator when sequences finish or are preempted (only between steps, never while the
//          executor may still write their blocks).
#include <spdlog/logger.h>

#include <random>
#include <unordered_map>
#include <unordered_set>

#include "actors/messages.hpp"
#include "pagedserve/metrics.hpp"
#include "pagedserve/scheduler_policy.hpp"

namespace pagedserve {

class scheduler_actor : public actor<scheduler_actor, scheduler_mailbox> {
 public:
  scheduler_actor(const boost::asio::any_io_executor& ex, scheduler_limits limits, int block_size);
  void connect(mailbox_ref<kv_allocator_mailbox>& kv, mailbox_ref<executor_mailbox>& executor,
               serving_metrics* metrics = nullptr) {
    kv_ = &kv;
    executor_ = &executor;
    metrics_ = metrics;
  }

  void on(submit_request m);
  void on(finish_request m);
  void on(finish_all m);
  void on(step_allocated m);
  void on(step_executed m);
  void on(report_scheduler_status m);

 private:
  // follows_step: called as the previous step ended (the executor waits for this one).
  void start_step_if_idle(bool follows_step = false);
  void request_allocation();
  void commit_computed_blocks();
  void deliver(std::vector<sequence_update>& updates, std::vector<std::vector<token_logprobs>> logprobs);
  std::shared_ptr<step_batch> build_batch(const std::vector<std::vector<std::int32_t>>& tables) const;

  scheduler_policy policy_;
  int block_size_;
  mailbox_ref<kv_allocator_mailbox>* kv_ = nullptr;
  mailbox_ref<executor_mailbox>* executor_ = nullptr;
  serving_metrics* metrics_ = nullptr;  // queue time (null in tests that need no metrics)

  bool step_in_flight_ = false;
  bool step_follows_ = false;  // the step in flight was planned the moment the previous one ended
  step_id step_{0};
  std::vector<step_chunk> plan_;  // the step in flight
  std::unordered_map<request_id, std::shared_ptr<mailbox_ref<request_mailbox>>> reply_to_;
  std::unordered_map<request_id, std::chrono::steady_clock::time_point> never_scheduled_;  // arrival times
  std::unordered_set<request_id> known_to_executor_;
  std::unordered_map<request_id, request_error> ending_with_error_;  // finish pending, final is request_failed
  std::optional<request_error> closed_;  // finish_all came: new submissions get this error
  std::vector<request_id> dropped_;  // finished sequences the executor may forget, sent with the next step
  // Sample groups (n > 1) still expecting members: the first member's id and how many are to come.
  struct open_group {
    request_id first;
    int to_come = 0;
  };
  std::unordered_map<std::uint64_t, open_group> groups_;
  std::mt19937_64 seed_source_{std::random_device{}()};
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace pagedserve
