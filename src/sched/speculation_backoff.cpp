#include "sched/speculation_backoff.hpp"

#include <algorithm>

namespace pagedserve {
namespace {
// A verification of few rows may cost several decode steps on a small model (stories260K: 5 rows take
// 4x one), so a cut-off is decided on one full verification's evidence, and the back-off is long.
constexpr double record_decay = 0.8;     // per verification: the last ~5 count most
constexpr double min_evidence = 4;       // proposed tokens (decayed) before a cut-off is decided
constexpr int backoff_tokens = 32;       // the first back-off, in generated tokens
constexpr int max_backoff_doublings = 3; // at most 32 << 3 = 256 tokens without proposals
}  // namespace

double speculation_break_even(const speculation_limits& limits, const step_cost_model& cost, int n_decodes) {
  const double knee = speculation_knee_rows(limits, cost);
  const int k = std::max(1, limits.num_speculative_tokens);
  const double drafting = limits.draft_model ? limits.draft_cost * (k + 1) / k : 0.0;
  return std::min(1.0, 1.0 / (knee / std::max(1, n_decodes) + 1.0) + drafting);
}

bool speculation_backoff_at_longest(const speculation_record& r) { return r.n_cutoffs > max_backoff_doublings; }

void speculation_observe(speculation_record& r, int n_proposed, int n_accepted, double break_even, int n_generated) {
  if (n_proposed <= 0) return;
  r.n_proposed = r.n_proposed * record_decay + n_proposed;
  r.n_accepted = r.n_accepted * record_decay + n_accepted;
  if (r.n_proposed < min_evidence) return;
  if (r.n_accepted >= break_even * r.n_proposed) {
    r.n_cutoffs = 0;
    return;
  }
  r.resume_at = n_generated + (backoff_tokens << std::min(r.n_cutoffs, max_backoff_doublings));
  ++r.n_cutoffs;
  r.n_proposed = r.n_accepted = 0;  // the retry is judged on its own proposals
}

}  // namespace pagedserve
