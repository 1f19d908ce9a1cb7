#pragma once
// What one engine step may hold: max_num_batched_tokens tokens, and when it carries decodes, no more
// prefill work than keeps it within max_decode_slowdown of the decodes alone (by the learnt step
// cost). Work is in token-equivalents: each token plus attention_ratio() per position it attends over.
#include <vector>

#include "sched/scheduler_state.hpp"
#include "sched/step_cost_model.hpp"

namespace pagedserve {

// Positions a chunk of n_tokens starting at position `first` attends over (each token: 0..its own).
double attended_positions(int first, int n_tokens);
double chunk_work(const step_cost_model& cost, int first, int n_tokens);
double step_work(const step_cost_model& cost, const std::vector<step_chunk>& chunks);
// Prefill work a step whose decodes do decode_work may add under max_decode_slowdown (unbounded when
// there is no bound, no decode, or no fitted cost model yet).
double prefill_work_allowance(const scheduler_limits& limits, const step_cost_model& cost, double decode_work,
                              bool has_decodes);
// The executed step took this long (feeds the cost model).
void observe_step_time(step_cost_model& cost, const std::vector<step_chunk>& chunks, double seconds);

// Spent as a step is built: decodes first, then prefill chunks under what the decodes leave.
class step_budget {
 public:
  step_budget(const scheduler_limits& limits, const step_cost_model& cost);

  // Takes one token for a decode at position `first`; false when the token budget is spent.
  bool take_decode(int first);
  // Takes up to n tokens for the proposals verified after a decode at `first`; returns how many fit.
  int take_proposals(int first, int n);
  // Prefill may start once the decodes are in; the allowance is fixed from them.
  void start_prefill();
  bool can_prefill() const;
  // The tokens of a prefill chunk at `first` with `remaining` tokens left to compute (0: none fit).
  // Longest within the work left, but the step's first chunks always get min_prefill_chunk tokens.
  int take_prefill(int first, int remaining);

 private:
  const scheduler_limits& limits_;
  const step_cost_model& cost_;
  int tokens_left_;
  double decode_work_ = 0;
  bool has_decodes_ = false;
  double work_left_ = 0;
  int floor_left_;
};

}  // namespace pagedserve
