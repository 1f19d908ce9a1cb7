#pragma once
// How long an engine step takes as a function of its work, learnt from the steps the executor ran:
//   seconds ~= fixed + per_token * tokens + per_position * attended positions
// The fixed part is mostly streaming the weights (paid once per step however many tokens share it),
// the per-token part the matmul FLOPs, the per-position part attention over the cached context.
// The scheduler uses it to size prefill chunks so decoding streams are not slowed past a bound, in
// token-equivalents: work = tokens + attention_ratio() * positions.
//
// Attention's weight is learnt, not assumed: its cost relative to a token's matmuls depends on the
// kernels (int8 VNNI matmuls are ~5x faster than fp32, attention stays fp32), and a FLOP-ratio guess
// let chunks deep into a long prompt run at 4x the decode-only step. Until the steps seen vary enough
// to tell the two apart, attention_ratio() is the prior given at construction.
//
// Fitted by least squares with exponential forgetting, so it follows the machine (noisy memory
// bandwidth, other load) and the context lengths of the running sequences.
namespace pagedserve {

class step_cost_model {
 public:
  explicit step_cost_model(double attention_prior = 0, double decay = 0.98)
      : prior_(attention_prior), decay_(decay) {
    fit_.attention_ratio = prior_;
  }

  void observe(double tokens, double positions, double seconds);
  // True once the observations span enough different step sizes to tell fixed from per-unit cost.
  bool fitted() const;
  double fixed_seconds() const { return fit_.fixed; }
  double per_unit_seconds() const { return fit_.per_token; }  // per token-equivalent
  double attention_ratio() const { return fit_.attention_ratio; }
  double predict(double work) const { return fixed_seconds() + per_unit_seconds() * work; }

 private:
  struct line {
    double fixed = 0, per_token = 0, attention_ratio = 0;
  };
  line fit() const;  // from the moments below; kept in fit_ after each observation

  double prior_, decay_;
  // Decayed weight and moments of tokens (1), positions (2) and seconds (y).
  double w_ = 0, s1_ = 0, s2_ = 0, sy_ = 0, s11_ = 0, s12_ = 0, s22_ = 0, s1y_ = 0, s2y_ = 0;
  int n_ = 0;
  line fit_;
};

}  // namespace pagedserve
