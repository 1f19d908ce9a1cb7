#include "sampling/speculative_sampling.hpp"

#include <algorithm>

#include "pagedserve/check.hpp"

namespace pagedserve {

token_id speculative_sample(std::span<const float> p, std::span<const float> q, token_id proposed,
                            std::mt19937_64& rng) {
  const int n = static_cast<int>(p.size());
  ps_check(proposed >= 0 && proposed < n && (q.empty() || q.size() == p.size()),
           "speculative_sample: a proposal outside the vocabulary");
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double q_proposed = q.empty() ? 1.0 : q[proposed];
  if (q_proposed > 0 && uniform(rng) * q_proposed < p[proposed]) return proposed;  // u < p/q
  // Rejected: draw from max(0, p - q), which is 0 at `proposed` (rejection needs p < q there).
  auto residual = [&](int t) {
    if (t == proposed) return 0.0;
    return std::max(0.0, static_cast<double>(p[t]) - (q.empty() ? 0.0 : q[t]));
  };
  double mass = 0;
  for (int t = 0; t < n; ++t) mass += residual(t);
  if (mass <= 0) return proposed;  // p == q: rejection had probability 0, only rounding gets here
  const double r = uniform(rng) * mass;
  double cumulative = 0;
  int last = proposed;
  for (int t = 0; t < n; ++t) {
    const double w = residual(t);
    if (w <= 0) continue;
    cumulative += w;
    last = t;
    if (r < cumulative) return t;
  }
  return last;
}

}  // namespace pagedserve
