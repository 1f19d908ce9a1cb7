#include "sched/speculation_policy.hpp"

#include <algorithm>
#include <cmath>

#include "sched/step_cost_model.hpp"

namespace pagedserve {

int speculation_knee_rows(const speculation_limits& limits, const step_cost_model& cost) {
  if (limits.fixed_knee_rows > 0) return limits.fixed_knee_rows;
  if (!cost.fitted() || cost.per_unit_seconds() <= 0) return limits.knee_rows_prior;
  // Where the rows' compute equals the weight streaming every step pays once.
  const double knee = cost.fixed_seconds() / cost.per_unit_seconds();
  return static_cast<int>(std::clamp(knee + 1e-6, 0.0, 4096.0));  // 1e-6: rounding in the fit
}

int speculation_per_sequence(const speculation_limits& limits, const step_cost_model& cost, int n_decodes) {
  if (limits.num_speculative_tokens <= 0 || n_decodes <= 0) return 0;
  const int spare = speculation_knee_rows(limits, cost) - n_decodes;
  return std::clamp(spare / n_decodes, 0, limits.num_speculative_tokens);
}

}  // namespace pagedserve
