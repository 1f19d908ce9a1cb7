#pragma once
// How many proposed tokens a decoding sequence may have verified in this step. Verifying k proposals
// costs k more rows in the step's matmuls; while the step is bound by streaming the weights (few
// rows) those rows are almost free, and once it is bound by compute every verified row costs what a
// decode does, so rejected proposals only slow the batch down. The knee is read from the learnt step
// cost (fixed seconds = weight streaming, per-token seconds = compute): proposals are allowed while
// the step's rows stay within fixed / per_token of them, and shrink evenly over the decoding rows as
// the batch grows, until they switch off.
#include "pagedserve/ids.hpp"

namespace pagedserve {

class step_cost_model;

struct speculation_limits {
  int num_speculative_tokens = 0;  // proposals per sequence and step at most; 0 = no speculation
  int lookup_max = 4;              // n-gram lookup: longest suffix matched
  int lookup_min = 1;              // n-gram lookup: shortest suffix matched
  // Rows a step may hold before verification stops paying, until the step cost model has learnt it.
  int knee_rows_prior = 32;
  int fixed_knee_rows = 0;  // set: this bound instead of the learnt one (tests, benchmarks)
  // Proposals come from a draft model run by the executor: the plan holds placeholders for them (as
  // many as the limits allow), which the executed step's drafted tokens replace (adopt_drafted_proposals).
  bool draft_model = false;
  // The draft model's weight bytes over the target's: each of its passes costs about this share of a
  // target step (both stream their weights), a cost a proposal adds to its verification row.
  double draft_cost = 0;
};

// Rows (decode rows plus proposals) a step may hold while proposals still pay.
int speculation_knee_rows(const speculation_limits& limits, const step_cost_model& cost);
// Proposals each of n_decodes decoding sequences may have verified in one step (0 = none).
int speculation_per_sequence(const speculation_limits& limits, const step_cost_model& cost, int n_decodes);

}  // namespace pagedserve
