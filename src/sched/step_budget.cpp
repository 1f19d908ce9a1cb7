#include "sched/step_budget.hpp"

#include <algorithm>
#include <limits>

namespace pagedserve {

double attended_positions(int first, int n_tokens) {
  // Each token attends over positions 0..p: first+1 .. first+n_tokens of them.
  return static_cast<double>(n_tokens) * first + 0.5 * n_tokens * (n_tokens + 1.0);
}

double chunk_work(const step_cost_model& cost, int first, int n_tokens) {
  return n_tokens + cost.attention_ratio() * attended_positions(first, n_tokens);
}

double step_work(const step_cost_model& cost, const std::vector<step_chunk>& chunks) {
  double work = 0;
  for (const step_chunk& c : chunks) work += chunk_work(cost, c.first, c.n_tokens);
  return work;
}

double prefill_work_allowance(const scheduler_limits& limits, const step_cost_model& cost, double decode_work,
                              bool has_decodes) {
  constexpr double unbounded = std::numeric_limits<double>::infinity();
  if (limits.max_decode_slowdown <= 0 || !has_decodes) return unbounded;
  // Decodes running but no cost model yet: only the floor chunk, whose varied size also teaches it.
  if (!cost.fitted()) return 0;
  // fixed + per_unit * (decodes + prefill) <= slowdown * (fixed + per_unit * decodes)
  return (limits.max_decode_slowdown - 1) * cost.predict(decode_work) / cost.per_unit_seconds();
}

void observe_step_time(step_cost_model& cost, const std::vector<step_chunk>& chunks, double seconds) {
  double tokens = 0, positions = 0;
  for (const step_chunk& c : chunks) {
    tokens += c.n_tokens;
    positions += attended_positions(c.first, c.n_tokens);
  }
  cost.observe(tokens, positions, seconds);
}

step_budget::step_budget(const scheduler_limits& limits, const step_cost_model& cost)
    : limits_(limits), cost_(cost), tokens_left_(limits.max_num_batched_tokens), floor_left_(limits.min_prefill_chunk) {}

bool step_budget::take_decode(int first) {
  if (tokens_left_ == 0) return false;
  --tokens_left_;
  decode_work_ += chunk_work(cost_, first, 1);
  has_decodes_ = true;
  return true;
}

int step_budget::take_proposals(int first, int n) {
  n = std::min(n, tokens_left_);
  if (n <= 0) return 0;
  tokens_left_ -= n;
  // The decode's own token was counted by take_decode: the proposals add the rows after it.
  decode_work_ += chunk_work(cost_, first, 1 + n) - chunk_work(cost_, first, 1);
  return n;
}

void step_budget::start_prefill() { work_left_ = prefill_work_allowance(limits_, cost_, decode_work_, has_decodes_); }

bool step_budget::can_prefill() const { return tokens_left_ > 0 && (work_left_ > 0 || floor_left_ > 0); }

int step_budget::take_prefill(int first, int remaining) {
  int n = std::min(remaining, tokens_left_);
  constexpr double slack = 1e-9;  // rounding in the cost model's arithmetic
  if (chunk_work(cost_, first, n) > work_left_ + slack) {  // the longest chunk within the work left
    int lo = 0, hi = n;  // chunk_work grows with the chunk
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (chunk_work(cost_, first, mid) <= work_left_ + slack) lo = mid;
      else hi = mid - 1;
    }
    n = std::max(lo, std::min(n, floor_left_));
  }
  tokens_left_ -= n;
  work_left_ -= chunk_work(cost_, first, n);
  floor_left_ = std::max(0, floor_left_ - n);
  return n;
}

}  // namespace pagedserve
