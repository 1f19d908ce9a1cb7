#include "pagedserve/step_cost_model.hpp"

#include <algorithm>

namespace pagedserve {

void step_cost_model::observe(double work, double seconds) {
  if (!(work > 0) || !(seconds > 0)) return;
  const double x = work;
  w_ = w_ * decay_ + 1;
  sx_ = sx_ * decay_ + x;
  sy_ = sy_ * decay_ + seconds;
  sxx_ = sxx_ * decay_ + x * x;
  sxy_ = sxy_ * decay_ + x * seconds;
  ++n_;
}

bool step_cost_model::fitted() const {
  if (n_ < 8) return false;
  // The step sizes must vary (a variance of at least one token squared) and the slope be positive.
  const double var = sxx_ / w_ - (sx_ / w_) * (sx_ / w_);
  if (var < 1.0) return false;
  return per_unit_seconds() > 0;
}

double step_cost_model::per_unit_seconds() const {
  if (w_ == 0) return 0;
  const double mx = sx_ / w_, my = sy_ / w_;
  const double var = sxx_ / w_ - mx * mx;
  return var > 0 ? (sxy_ / w_ - mx * my) / var : 0;
}

double step_cost_model::fixed_seconds() const {
  if (w_ == 0) return 0;
  return std::max(0.0, sy_ / w_ - per_unit_seconds() * sx_ / w_);
}

}  // namespace pagedserve
