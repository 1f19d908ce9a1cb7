#include <algorithm>
#include <cmath>
#include <limits>

#include "pagedserve/sampling.hpp"
#include "sampling/candidate_selection.hpp"
#include "sampling/probability_row.hpp"
#include "sampling/speculative_sampling.hpp"

namespace pagedserve {

token_id argmax(const float* logits, int n) {
  // Two branch-free passes the compiler vectorises: the largest value (8 running maxima), then the
  // first index holding it, so ties keep the lowest id, as run.c. NaNs are never the maximum.
  constexpr int lanes = 8;
  float lane_max[lanes];
  std::fill(lane_max, lane_max + lanes, -std::numeric_limits<float>::infinity());
  int i = 0;
  for (; i + lanes <= n; i += lanes)
    for (int j = 0; j < lanes; ++j) lane_max[j] = logits[i + j] > lane_max[j] ? logits[i + j] : lane_max[j];
  float best = *std::max_element(lane_max, lane_max + lanes);
  for (; i < n; ++i) best = logits[i] > best ? logits[i] : best;
  for (int k = 0; k < n; ++k)
    if (logits[k] == best) return k;
  return 0;  // every logit NaN
}

sampler::sampler(const sampling_params& p, std::uint64_t seed, const std::vector<token_id>& prompt)
    : temperature_(p.temperature),
      top_p_(p.top_p),
      min_p_(p.min_p),
      top_k_(p.top_k),
      presence_(p.presence_penalty),
      frequency_(p.frequency_penalty),
      repetition_(p.repetition_penalty),
      bias_(p.logit_bias),
      n_logprobs_(p.logprobs),
      rng_(seed) {
  if (repetition_ != 1.0f)
    for (token_id t : prompt) seen_[t] = true;
}

void sampler::apply_penalties_and_bias(float* logits, int n) const {
  if (repetition_ != 1.0f)
    for (const auto& [t, _] : seen_)
      if (t >= 0 && t < n) logits[t] = logits[t] > 0 ? logits[t] / repetition_ : logits[t] * repetition_;
  if (presence_ != 0.0f || frequency_ != 0.0f)
    for (const auto& [t, count] : generated_counts_)
      if (t >= 0 && t < n) logits[t] -= presence_ + frequency_ * static_cast<float>(count);
  for (const auto& [t, b] : bias_)
    if (t >= 0 && t < n) logits[t] += b;
}

namespace {

// The tokens a draw may pick, with their unnormalised probabilities, in the order the draw walks them.
struct candidate_view {
  const float* p = nullptr;
  const token_id* id = nullptr;  // null: the whole vocabulary in id order, id = index
  std::size_t n = 0;             // 0: the row has no finite maximum, the caller takes the argmax
  bool block_sums_filled = false;  // scratch().block_sums already holds p's (the probabilities pass)
};

// Per-thread scratch: rows of a step are sampled in parallel, each on one thread from start to end.
struct row_scratch {
  std::vector<float> probabilities;  // [n_vocab]
  sampling::kept_candidates kept;
  std::vector<float> block_sums;
};

row_scratch& scratch() {
  thread_local row_scratch s;
  return s;
}

// One vectorised pass for the probabilities at this temperature and their sum; with top-k / top-p /
// min-p, only the tokens that can be kept are sorted (sampling/candidate_selection.hpp).
candidate_view keep_candidates(const float* logits, int n, float temperature, const sampling::cut_params& cut) {
  const sampling::probability_kernels& kernels = sampling::best_probability_kernels();
  const float max_logit = kernels.row_max(logits, n);
  if (!std::isfinite(max_logit)) return {};
  row_scratch& s = scratch();
  s.probabilities.resize(n);
  // Block sums serve the draw over the whole row; a cut's draw sums its few kept tokens itself.
  const bool whole_row = !cut.truncates(n);
  s.block_sums.resize((n + sampling::probability_lanes - 1) / sampling::probability_lanes);
  const float sum = kernels.probabilities(s.probabilities.data(), whole_row ? s.block_sums.data() : nullptr, logits,
                                          n, max_logit, 1.0f / temperature);
  if (!(sum > 0.0f)) return {};  // a temperature so low that 0 * (1 / T) is NaN
  if (whole_row) return {s.probabilities.data(), nullptr, static_cast<std::size_t>(n), true};
  sampling::select_kept(s.kept, s.probabilities.data(), n, sum, cut, kernels);
  return {s.kept.p.data(), s.kept.id.data(), s.kept.kept};
}

// Log-probabilities of `chosen` and the k most likely tokens under log-softmax(logits). The sum is the
// sampler's one pass at temperature 1; the k most likely are sorted among the tokens whose probability
// reaches the k-th largest (probability never decreases with the logit, so those hold the k largest
// logits), not among the whole vocabulary.
void fill_logprobs(const float* logits, int n, token_id chosen, int k, token_logprobs& out) {
  const sampling::probability_kernels& kernels = sampling::best_probability_kernels();
  const float max_logit = kernels.row_max(logits, n);
  row_scratch& s = scratch();
  s.probabilities.resize(n);
  const bool finite = std::isfinite(max_logit);
  const float sum = finite ? kernels.probabilities(s.probabilities.data(), nullptr, logits, n, max_logit, 1.0f) : 1.0f;
  const float log_z = max_logit + std::log(sum);
  out.logprob = logits[chosen] - log_z;
  out.top.clear();
  if (k <= 0) return;
  k = std::min(k, n);
  std::vector<token_id>& ids = s.kept.id;
  int m = n;
  if (finite && k < n) {
    sampling::select_kept(s.kept, s.probabilities.data(), n, sum, {k, 1.0f, 0.0f}, kernels);
    const float kth = s.kept.p[k - 1];
    m = kernels.collect_above(s.kept.p.data(), ids.data(), s.probabilities.data(), n, kth);
  } else {
    ids.resize(n);
    for (int i = 0; i < n; ++i) ids[i] = i;
  }
  auto rank = [&](token_id t) { return logits[t] == logits[t] ? logits[t] : -std::numeric_limits<float>::infinity(); };
  std::partial_sort(ids.begin(), ids.begin() + k, ids.begin() + m,
                    [&](token_id a, token_id b) { return rank(a) > rank(b) || (rank(a) == rank(b) && a < b); });
  for (int i = 0; i < k; ++i) out.top.emplace_back(ids[i], logits[ids[i]] - log_z);
}

}  // namespace

token_id sampler::sample_at_temperature(const float* logits, int n) {
  const candidate_view c = keep_candidates(logits, n, temperature_, {top_k_, top_p_, min_p_});
  if (c.n == 0) return argmax(logits, n);
  std::vector<float>& block_sums = scratch().block_sums;
  const float mass = c.block_sums_filled ? sampling::block_total(block_sums) : sampling::draw_mass(block_sums, c.p, c.n);
  const float r = std::uniform_real_distribution<float>(0.0f, mass)(rng_);
  const std::size_t i = sampling::draw_index(c.p, c.n, block_sums, r);
  return c.id ? c.id[i] : static_cast<token_id>(i);
}

token_id sampler::sample(float* logits, int n, token_logprobs* logprobs_out) {
  // Raw distribution for logprobs is read before penalties change the logits.
  std::vector<float> raw;
  if (logprobs_out && n_logprobs_ >= 0) raw.assign(logits, logits + n);
  apply_penalties_and_bias(logits, n);
  if (constraint_) constraint_->mask(logits, n);
  const token_id chosen = temperature_ <= 0.0f ? argmax(logits, n) : sample_at_temperature(logits, n);
  if (!raw.empty()) fill_logprobs(raw.data(), n, chosen, n_logprobs_, *logprobs_out);
  record(chosen);
  return chosen;
}

void sampler::record(token_id chosen) {
  if (constraint_) constraint_->accept(chosen);
  ++generated_counts_[chosen];
  if (repetition_ != 1.0f) seen_[chosen] = true;
}

token_id sampler::sample_proposed(float* logits, int n, token_id proposed, token_logprobs* logprobs_out,
                                  std::span<const float> q) {
  // Greedy: the argmax, exactly what sample() picks, so speculation never changes a greedy output.
  if (temperature_ <= 0.0f) return sample(logits, n, logprobs_out);
  std::vector<float> raw;
  if (logprobs_out && n_logprobs_ >= 0) raw.assign(logits, logits + n);
  apply_penalties_and_bias(logits, n);
  if (constraint_) constraint_->mask(logits, n);
  // The distribution sample() draws from, dense over the vocabulary.
  const candidate_view c = keep_candidates(logits, n, temperature_, {top_k_, top_p_, min_p_});
  target_.assign(n, 0.0f);
  if (c.n == 0) {
    target_[argmax(logits, n)] = 1.0f;
  } else {
    std::vector<float>& block_sums = scratch().block_sums;
    const float mass = c.block_sums_filled ? sampling::block_total(block_sums) : sampling::draw_mass(block_sums, c.p, c.n);
    for (std::size_t i = 0; i < c.n; ++i) target_[c.id ? c.id[i] : static_cast<token_id>(i)] = c.p[i] / mass;
  }
  const token_id chosen = speculative_sample(target_, q, proposed, rng_);
  if (!raw.empty()) fill_logprobs(raw.data(), n, chosen, n_logprobs_, *logprobs_out);
  record(chosen);
  return chosen;
}

}  // namespace pagedserve
