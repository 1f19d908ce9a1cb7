#pragma once
// How long an engine step takes as a function of its work (tokens, plus attention in token-
// equivalents), learnt from the steps the executor ran: seconds ~= fixed + per_unit * work. The fixed
// part is mostly streaming the weights (paid once per step however many tokens share it), the
// per-unit part the FLOPs. The
// scheduler uses it to size prefill chunks so decoding streams are not slowed past a bound.
//
// Fitted by least squares with exponential forgetting, so it follows the machine (noisy memory
// bandwidth, other load) and the context lengths of the running sequences.
namespace pagedserve {

class step_cost_model {
 public:
  explicit step_cost_model(double decay = 0.98) : decay_(decay) {}

  void observe(double work, double seconds);
  // True once the observations span enough different step sizes to tell fixed from per-unit cost.
  bool fitted() const;
  double fixed_seconds() const;
  double per_unit_seconds() const;
  double predict(double work) const { return fixed_seconds() + per_unit_seconds() * work; }

 private:
  double decay_;
  double w_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;  // decayed weight and moments
  int n_ = 0;
};

}  // namespace pagedserve
