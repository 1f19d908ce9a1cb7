#include "sched/step_cost_model.hpp"

#include <algorithm>

namespace pagedserve {

void step_cost_model::observe(double tokens, double positions, double seconds) {
  if (!(tokens > 0) || !(seconds > 0) || !(positions >= 0)) return;
  auto decayed = [&](double& sum, double x) { sum = sum * decay_ + x; };
  decayed(w_, 1);
  decayed(s1_, tokens);
  decayed(s2_, positions);
  decayed(sy_, seconds);
  decayed(s11_, tokens * tokens);
  decayed(s12_, tokens * positions);
  decayed(s22_, positions * positions);
  decayed(s1y_, tokens * seconds);
  decayed(s2y_, positions * seconds);
  ++n_;
  fit_ = fit();
}

step_cost_model::line step_cost_model::fit() const {
  line l;
  l.attention_ratio = prior_;
  if (w_ == 0) return l;
  const double m1 = s1_ / w_, m2 = s2_ / w_, my = sy_ / w_;
  const double c11 = s11_ / w_ - m1 * m1, c22 = s22_ / w_ - m2 * m2, c12 = s12_ / w_ - m1 * m2;
  const double c1y = s1y_ / w_ - m1 * my, c2y = s2y_ / w_ - m2 * my;
  // Both costs, when tokens and positions varied independently enough (correlation^2 < 0.99).
  const double det = c11 * c22 - c12 * c12;
  if (c11 >= 1.0 && c22 > 0 && det > 0.01 * c11 * c22) {
    const double per_token = (c22 * c1y - c12 * c2y) / det;
    const double per_position = (c11 * c2y - c12 * c1y) / det;
    if (per_token > 0 && per_position >= 0) {
      l.per_token = per_token;
      l.attention_ratio = per_position / per_token;
      l.fixed = std::max(0.0, my - per_token * m1 - per_position * m2);
      return l;
    }
  }
  // Otherwise one slope over work = tokens + prior * positions.
  const double mx = m1 + prior_ * m2;
  const double var = c11 + 2 * prior_ * c12 + prior_ * prior_ * c22;
  const double cov = c1y + prior_ * c2y;
  if (var > 0) l.per_token = cov / var;
  l.fixed = std::max(0.0, my - l.per_token * mx);
  return l;
}

bool step_cost_model::fitted() const {
  if (n_ < 8) return false;
  // The step sizes must vary (a variance of at least one token squared) and the slope be positive.
  const double m1 = s1_ / w_;
  if (s11_ / w_ - m1 * m1 < 1.0) return false;
  return per_unit_seconds() > 0;
}

}  // namespace pagedserve
