#pragma once
// Every message between the four actors, grouped by the mailbox that accepts it. Commands are
// imperatives, events past tense; each carries its request_id or step_id so stale replies are dropped.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "actors/actor.hpp"
#include "pagedserve/engine_error.hpp"
#include "pagedserve/engine_status.hpp"
#include "model/forward.hpp"
#include "pagedserve/ids.hpp"
#include "pagedserve/request.hpp"
#include "pagedserve/sampling.hpp"
#include "sched/schedule_step.hpp"

namespace pagedserve {

// ---- RequestActor mailbox (the scheduler, and the client's connection) ----
struct tokens_generated {
  request_id id;
  std::vector<token_id> tokens;
  std::vector<token_logprobs> logprobs;  // parallel to tokens when the request asked, else empty
};
struct request_finished {
  request_id id;
  finish_reason reason;
  usage used;
};
struct request_rejected {  // not admitted: the waiting queue is full
  request_id id;
  engine_error code;
  std::string message;
};
// Why a request is being ended by the server rather than finishing: its final event is this error
// (shutting_down, request_timeout, client_too_slow).
using request_error = engine_failure;
struct request_failed {  // ended with an error after admission (finish_request/finish_all carrying one)
  request_id id;
  request_error error;
  usage used;
};
// From the client's connection:
struct start_generation {};  // render and tokenize the prompt (on the engine's prompt thread), then prompt_prepared
struct prompt_prepared {     // the prompt's token ids, or why there are none: validate against the context, submit
  std::expected<std::vector<token_id>, std::string> tokens;
};
struct cancel_generation {   // the client sent cancel or went away; with an error: the server ends it
  std::optional<request_error> error;
};
using request_mailbox = std::variant<tokens_generated, request_finished, request_rejected, request_failed,
                                     start_generation, prompt_prepared, cancel_generation>;

// ---- SchedulerActor mailbox ----
struct submit_request {  // from a RequestActor
  request_id id;
  std::optional<sample_group> group;
  std::uint64_t cache_salt = 0;
  std::vector<token_id> prompt;
  std::shared_ptr<const sampling_params> params;
  std::vector<token_id> stop_ids;
  std::shared_ptr<mailbox_ref<request_mailbox>> reply_to;
  std::chrono::steady_clock::time_point arrived;  // when the client's request was accepted
  std::uint64_t client = 0;  // its connection (sequence::client: admission takes turns across clients)
};
struct finish_request {  // from a RequestActor: the client cancelled, a stop string matched, or it timed out
  request_id id;
  finish_reason reason;
  std::optional<request_error> error;  // set: the request ends with request_failed, not request_finished
};
struct withdraw_sample {  // from a RequestActor: a sample of a group (n > 1) ended before it was submitted
  std::uint64_t group_key = 0;
  int group_size = 0;
};
// From the shutdown path: end every admitted request with this error at the next step boundary, and
// refuse every later submit_request with it. The server is going away.
struct finish_all {
  request_error error;
};
struct step_scheduled {  // from the KvAllocatorActor: the reply to schedule_next_step
  step_id step;
  std::unique_ptr<scheduler_state> state;  // the lent queues, back
  step_result previous;                    // of the step executed before (empty if none)
  step_plan plan;                          // the next step; no chunks: nothing to run
};
struct step_executed {  // from the ExecutorActor
  step_id step;
  // Per sampling chunk, in plan order: its accepted proposals (speculative decoding), then one token.
  std::vector<token_id> sampled;
  std::vector<std::optional<token_logprobs>> logprobs;  // parallel to sampled; set where asked
  double compute_seconds = 0;  // the forward pass and sampling (the scheduler's step cost model)
  // A draft model's proposals, per sampling chunk in plan order (the plan held placeholders); empty
  // without a draft model.
  std::vector<std::vector<token_id>> drafted;
};
struct report_scheduler_status {  // from the network edge (/health)
  std::function<void(scheduler_status)> reply;
};
using scheduler_mailbox = std::variant<submit_request, finish_request, withdraw_sample, finish_all, step_scheduled,
                                       step_executed, report_scheduler_status>;

// ---- KvAllocatorActor mailbox (sent by the scheduler, and /health) ----
// One engine step is one exchange: the scheduler lends the allocator its queues with the executed
// step's result; the allocator runs apply_step_result and schedule_step (pagedserve/schedule_step.hpp)
// over them and the block_manager it owns, and hands the queues back with the next step's plan.
struct schedule_next_step {
  step_id step;
  std::unique_ptr<scheduler_state> state;  // lent for the exchange, returned in step_scheduled
  struct executed {
    std::vector<token_id> sampled;  // per sampling chunk of the step in state->scheduled, as step_executed's
    double compute_seconds = 0;
  };
  std::optional<executed> previous;  // the step just executed, if any: applied before planning
};
struct report_kv_status {
  std::function<void(kv_pool_status)> reply;
};
using kv_allocator_mailbox = std::variant<schedule_next_step, report_kv_status>;

// ---- ExecutorActor mailbox (sent by the scheduler) ----
struct sequence_started {
  request_id id;
  std::shared_ptr<const sampling_params> params;
  std::uint64_t seed;
  std::vector<token_id> prompt;  // for the repetition penalty
};
struct execute_step {
  step_id step;
  std::shared_ptr<const step_batch> batch;
  std::vector<request_id> sample_for;       // sequence of each sampling chunk, in plan order
  std::vector<sequence_started> started;    // sequences new to the executor this step
  std::vector<request_id> dropped;          // sequences the executor can forget
  std::vector<std::pair<std::int32_t, std::int32_t>> block_copies;  // {from, to}, made before the forward
  bool follows_step = false;  // planned as soon as the previous step ended: time between them is a gap
  // Empty, or parallel to sample_for: the tokens proposed after each chunk's last token (speculative
  // decoding; usually none). A chunk with k proposals has k + 1 logits rows.
  std::vector<std::vector<token_id>> proposed;
  // Per sequence of the batch (one per plan chunk, in order): 1 where a draft model mirrors its rows
  // (draft_proposer.hpp); none set: the draft does not run this step.
  std::vector<char> draft_mirrors;
};
using executor_mailbox = std::variant<execute_step>;

}  // namespace pagedserve
