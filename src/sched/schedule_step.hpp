#pragma once
// One engine step as two plain functions over the scheduler's queues and the block manager (vLLM's
// Scheduler.schedule() and update_from_output()): no threads, no messages. The actors only carry
// their inputs and outputs (actors/README.md).
//
//   schedule_step:      step boundary (pending finishes end, their blocks are freed); running decodes,
//                       then running prefill chunks, then admissions (prefix-cache hit or fork of a
//                       sample's prompt), each given its blocks at once; when a running sequence gets
//                       none the newest running sequence is preempted (recompute) until it does;
//                       copy-on-write of shared blocks the step writes; the batch.
//   apply_step_result:  the executed step's sampled tokens, stop rules, full blocks into the prefix
//                       cache, finished sequences' blocks freed.
#include <string>
#include <vector>

#include "kv/block_manager.hpp"
#include "sched/scheduler_state.hpp"
#include "pagedserve/step_batch.hpp"

namespace pagedserve {

// Sequences whose blocks went back to the pool, and any bookkeeping fault found doing it (a block
// the table named but no longer held: left out of the pool, for the caller to report).
struct blocks_freed {
  std::vector<request_id> ids;
  std::vector<std::string> faults;
};

struct step_plan {
  std::vector<step_chunk> chunks;  // decodes, running prefill chunks, admissions; empty: nothing to run
  std::vector<block_manager::block_copy> block_copies;  // made in this order before the forward pass
  step_batch batch;                                     // the chunks' tokens, slots and block tables
  std::vector<sequence_update> finished;  // ended at the step boundary (request_finish), blocks freed
  std::vector<request_id> preempted;      // back to waiting, to be recomputed
  blocks_freed freed;
};

// Plans the next step and allocates its blocks; the plan is also kept in state.scheduled until
// apply_step_result. Call only between steps: blocks it frees may be written by the next step.
step_plan schedule_step(scheduler_state& state, block_manager& blocks);

struct step_result {
  std::vector<sequence_update> updates;  // one per sampling chunk, in plan order
  blocks_freed freed;                    // the sequences that finished
};

// With a draft model (speculation_limits::draft_model): the executed step's proposals, one list per
// sampling chunk in plan order, replace the placeholders the plan verified; before apply_step_result.
void adopt_drafted_proposals(std::vector<step_chunk>& scheduled, const std::vector<std::vector<token_id>>& drafted);

// The step in state.scheduled was executed: `sampled` holds one token per sampling chunk, in plan
// order, and it took `seconds` (the step cost model learns from it).
step_result apply_step_result(scheduler_state& state, block_manager& blocks, const std::vector<token_id>& sampled,
                              double seconds);

}  // namespace pagedserve
