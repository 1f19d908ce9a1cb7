#pragma once
// Per-sequence cut-off of speculative proposals whose acceptance is too low to pay. A proposed row
// costs a row of the step's matmuls (the step cost model's per-token seconds); an accepted one saves
// the sequence a whole decode step: its share of the weight streaming (fixed seconds over the decoding
// rows) plus its own row. Below the break-even acceptance per proposed token,
//   per_token / (fixed / n_decodes + per_token) = 1 / (knee / n_decodes + 1),
// plus, with a draft model, its share of a step per proposal (its k + 1 passes over k proposals, each
// pass draft_cost of a target step, shared by the same rows),
// verification costs more than it saves: the sequence stops proposing, and tries again after a
// back-off (in generated tokens) that doubles each time it is cut again, since a text may start
// quoting its prompt later on (a model that never quotes, such as stories260K, then pays almost nothing).
#include "sched/speculation_policy.hpp"

namespace pagedserve {

class step_cost_model;

struct speculation_record {
  // Recent proposals and acceptances, decayed by each verification, so the acceptance is the recent one.
  double n_proposed = 0, n_accepted = 0;
  int n_cutoffs = 0;  // consecutive cut-offs; the back-off doubles with each
  int resume_at = 0;  // n_generated from which the sequence proposes again
};

// Acceptance per proposed token below which proposals cost more than they save, at n_decodes rows.
double speculation_break_even(const speculation_limits& limits, const step_cost_model& cost, int n_decodes);
// Whether the sequence proposes now (it is not backing off).
inline bool speculation_may_propose(const speculation_record& r, int n_generated) { return n_generated >= r.resume_at; }
// Whether the sequence backs off for the longest time (cut off again and again): a draft model stops
// mirroring it then, as it does past the knee (schedule_step.cpp).
bool speculation_backoff_at_longest(const speculation_record& r);
// Records one verification (n_proposed > 0 of which n_accepted were accepted) and cuts proposals off
// for a back-off when the recent acceptance is below break_even.
void speculation_observe(speculation_record& r, int n_proposed, int n_accepted, double break_even, int n_generated);

}  // namespace pagedserve
