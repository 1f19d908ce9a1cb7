#pragma once
// What the scheduler knows between engine steps, as plain data: its limits, the waiting and running
// queues, finishes asked for, the step being executed, and the learnt step cost. schedule_step()
// (schedule_step.hpp) turns it and the block manager into the next step; nothing here does I/O.
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pagedserve/ids.hpp"
#include "pagedserve/request.hpp"
#include "pagedserve/sampling.hpp"
#include "sched/speculation_backoff.hpp"
#include "sched/speculation_policy.hpp"
#include "sched/step_cost_model.hpp"

namespace pagedserve {

struct scheduler_limits {
  int max_num_seqs = 64;              // sequences per step
  int max_num_batched_tokens = 512;   // tokens per step (decode tokens + prefill chunk tokens)
  int context_len = 0;                // positions a sequence may use: the model's seq_len, at most the KV pool
  int max_waiting = 1024;             // queued sequences before new ones are refused
  // A step that carries decodes may take at most this many times as long as the decodes alone would
  // (prefill chunks are cut to fit, by the learnt step cost); 0 = no bound, the token budget only.
  double max_decode_slowdown = 2.0;
  int min_prefill_chunk = 16;         // prefill always progresses by at least this many tokens a step
  // A step's work, in token-equivalents: each token, plus this much for every position it attends
  // over: the prior (attention FLOPs relative to a token's matmul FLOPs, attention_cost_of(model_config))
  // until the step cost model has learnt the ratio from the steps it timed.
  double attention_cost = 0;
  int max_waiting_per_client = 1024;  // queued sequences of one client (sequence::client) before its new ones are refused
  speculation_limits speculation;     // speculative decoding (n-gram proposals); off by default
};

// A sequence as the scheduler tracks it.
struct sequence {
  request_id id;
  std::vector<token_id> tokens;  // prompt, then generated tokens
  int n_prompt = 0;
  int n_computed = 0;            // leading tokens whose K/V are in the cache
  std::uint64_t arrival = 0;     // admission order; the newest is preempted first
  std::shared_ptr<const sampling_params> params;
  std::vector<token_id> stop_ids;  // sampling one of these ends the sequence (unless ignore_eos)
  std::uint64_t cache_salt = 0;    // prefix-cache isolation key
  // The client connection it came from (0: none given). Admission takes turns across clients: one
  // that queues many requests cannot take every free slot ahead of the others.
  std::uint64_t client = 0;
  // Another sample of the same prompt (n > 1): this one waits until that one has computed the prompt,
  // then shares its blocks instead of computing it again.
  std::optional<request_id> fork_of;
  // The first sample of a group while others have yet to reach the scheduler: held back from
  // admission so that all of them share its prompt blocks.
  bool awaiting_samples = false;
  int n_spec_draft_tokens = 0;     // proposals verified so far (usage)
  int n_spec_accepted_tokens = 0;  // of which accepted
  speculation_record spec_record;  // recent acceptance; proposals cut off while it does not pay
  // Draft-model speculation: the draft no longer mirrors this sequence's rows, so its draft K/V are
  // not valid and it never proposes again (decided afresh at each admission; schedule_step.cpp).
  bool draft_lapsed = false;

  int n_generated() const { return static_cast<int>(tokens.size()) - n_prompt; }
};

// One sequence's share of a step: the next n_tokens of its tokens; `samples` when the chunk reaches
// the end of its known tokens, so the step's last row for it yields a new token.
struct step_chunk {
  request_id id;
  int first = 0;     // index of the first token of the chunk (= its position)
  int n_tokens = 0;
  bool samples = false;
  bool admitted = false;  // taken from the waiting queue for this step
  std::optional<request_id> fork_from;  // admitted sharing this sequence's prompt blocks
  // Speculative decoding: tokens proposed to follow the sequence's last token, verified in this step
  // (the chunk is the last token then these, n_tokens = 1 + proposed.size(), every row sampled).
  std::vector<token_id> proposed;
  bool drafts = false;  // the draft model mirrors this chunk's rows (draft-model speculation only)
};

// What happened to a sequence in a step (or at a step boundary, for cancellations).
struct sequence_update {
  request_id id;
  std::vector<token_id> new_tokens;
  std::optional<finish_reason> finished;
  usage used;
  int n_sampled = 0;   // tokens the executor sampled for it (new_tokens may keep fewer: stop, max_tokens)
  int n_proposed = 0;  // speculative proposals verified in the step
  int n_accepted = 0;  // of which accepted
};

struct scheduler_state {
  explicit scheduler_state(scheduler_limits l) : limits(l), cost(l.attention_cost) {}

  // Queues a sequence; false (and nothing queued) when the waiting queue is full.
  bool add(sequence s);
  // Asks to end a sequence with `reason` at the next step boundary (unknown ids are ignored then).
  void request_finish(request_id id, finish_reason reason) { pending_finish.emplace(id, reason); }

  const sequence* find(request_id id) const;
  sequence* find(request_id id) { return const_cast<sequence*>(std::as_const(*this).find(id)); }
  int n_running() const { return static_cast<int>(running.size()); }
  int n_waiting() const { return static_cast<int>(waiting.size()); }
  int n_waiting_of(std::uint64_t client) const;

  scheduler_limits limits;
  std::deque<sequence> waiting;    // FIFO; preempted sequences go back to the front
  std::vector<sequence> running;   // admission order, so by arrival: the newest is last
  std::unordered_map<request_id, finish_reason> pending_finish;
  std::vector<step_chunk> scheduled;  // the step being executed (schedule_step's plan), plan order
  std::uint64_t next_arrival = 0;
  std::uint64_t n_preemptions = 0;
  step_cost_model cost;
};

}  // namespace pagedserve
