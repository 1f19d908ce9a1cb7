#pragma once
// The scheduling policy, free of I/O: waiting and running queues, one engine step planned at a time
// under a token budget and a sequence cap (decodes first, then prefill chunks), preemption by
// recompute when the KV pool runs out, and stop conditions. The scheduler actor drives it.
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pagedserve/ids.hpp"
#include "pagedserve/request.hpp"
#include "pagedserve/sampling.hpp"
#include "pagedserve/step_cost_model.hpp"

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
};

// What happened to a sequence in a step (or at a step boundary, for cancellations).
struct sequence_update {
  request_id id;
  std::vector<token_id> new_tokens;
  std::optional<finish_reason> finished;
  usage used;
};

class scheduler_policy {
 public:
  explicit scheduler_policy(scheduler_limits limits) : limits_(limits), cost_(limits.attention_cost) {}

  // Queues a sequence; false (and nothing queued) when the waiting queue is full.
  bool add(sequence s);
  // Asks to end a sequence with `reason` at the next step boundary.
  void request_finish(request_id id, finish_reason reason);

  // Applies pending finishes (returned as updates; their blocks must be freed), then plans the next
  // step: running decodes, running prefill chunks, then admissions from the waiting queue, each time
  // the first in queue order of those whose client has the fewest sequences running (a sample
  // waiting for its fork_of to compute the prompt is passed over; one whose fork_of has is admitted
  // as a fork: a one-token chunk recomputing the prompt's last token).
  std::vector<step_chunk> plan_step(std::vector<sequence_update>& finished_now);

  // The allocator could not give blocks to plan[index]. Adjusts the plan: an admission and all after it
  // go back to waiting; for a running sequence every admission goes back and the newest running
  // sequence is preempted. Returns the sequences whose blocks must be freed (the preempted one and the
  // admissions sent back); then ask again for the adjusted plan, if it is not empty.
  std::vector<request_id> on_allocation_refused(std::vector<step_chunk>& plan, std::size_t index);

  // The allocator found the first n_cached tokens of admitted plan[index] in the prefix cache: the
  // chunk starts after them (same token reservation, never past the sequence's end).
  void on_admission_cached(std::vector<step_chunk>& plan, std::size_t index, int n_cached);

  // Records a step's sampled tokens (one per sampling chunk, in plan order) and applies stop conditions.
  std::vector<sequence_update> on_step_executed(const std::vector<step_chunk>& plan,
                                                const std::vector<token_id>& sampled);

  // The plan's step took this long to compute (feeds the step cost model).
  void on_step_timed(const std::vector<step_chunk>& plan, double seconds);
  // Work (token-equivalents) of a chunk of n_tokens starting at position first, and of a plan.
  double chunk_work(int first, int n_tokens) const;
  static double attended_positions(int first, int n_tokens);
  double step_work(const std::vector<step_chunk>& plan) const;
  // Prefill work a step whose decodes do decode_work may add under max_decode_slowdown (unbounded
  // when there is no bound, no decode, or no fitted cost model yet).
  double prefill_work_allowance(double decode_work, bool has_decodes) const;
  const step_cost_model& cost_model() const { return cost_; }

  const sequence* find(request_id id) const;
  int n_running() const { return static_cast<int>(running_.size()); }
  int n_waiting() const { return static_cast<int>(waiting_.size()); }
  int n_waiting_of(std::uint64_t client) const;
  const scheduler_limits& limits() const { return limits_; }
  std::uint64_t n_preemptions() const { return n_preemptions_; }

 private:
  sequence* running_seq(request_id id);
  void preempt(request_id id);
  // How waiting sequence s may be admitted now: nullopt = hold it back; else the fork source, if any.
  std::optional<std::optional<request_id>> admission_of(const sequence& s) const;
  // The waiting sequence to admit next: the first in queue order whose client has the fewest
  // sequences running (n_running_of), with its fork source; nullopt when none may be admitted.
  struct next_admission {
    std::size_t index;
    std::optional<request_id> fork_from;
  };
  std::optional<next_admission> pick_admission(const std::unordered_map<std::uint64_t, int>& n_running_of) const;

  scheduler_limits limits_;
  std::deque<sequence> waiting_;           // FIFO; preempted sequences go back to the front
  std::vector<sequence> running_;          // admission order
  std::unordered_map<request_id, finish_reason> pending_finish_;
  std::uint64_t next_arrival_ = 0;
  std::uint64_t n_preemptions_ = 0;
  step_cost_model cost_;
};

}  // namespace pagedserve
