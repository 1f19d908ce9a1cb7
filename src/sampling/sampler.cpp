#include <algorithm>
#include <cmath>
#include <limits>

#include "pagedserve/sampling.hpp"
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

// Log-probabilities of `chosen` and the k most likely tokens under log-softmax(logits).
void fill_logprobs(const float* logits, int n, token_id chosen, int k, token_logprobs& out) {
  const float max_logit = logits[argmax(logits, n)];
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - max_logit));
  const float log_z = max_logit + static_cast<float>(std::log(sum));
  out.logprob = logits[chosen] - log_z;
  out.top.clear();
  if (k <= 0) return;
  std::vector<token_id> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = i;
  k = std::min(k, n);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                    [&](token_id a, token_id b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  for (int i = 0; i < k; ++i) out.top.emplace_back(ids[i], logits[ids[i]] - log_z);
}

}  // namespace

std::size_t sampler::keep_candidates(const float* logits, int n) {
  // Unnormalised probabilities at this temperature, in vocabulary order.
  candidates_.resize(n);
  const float max_logit = logits[argmax(logits, n)];
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float p = std::exp((logits[i] - max_logit) / temperature_);
    candidates_[i] = {p, i};
    sum += p;
  }
  auto more_likely = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  const auto begin = candidates_.begin();
  std::size_t keep = candidates_.size();
  if (top_k_ > 0 && static_cast<std::size_t>(top_k_) < keep) {
    std::partial_sort(begin, begin + top_k_, candidates_.end(), more_likely);
    keep = top_k_;
  } else if (min_p_ > 0.0f || top_p_ < 1.0f) {
    // min_p and top_p keep a prefix of the tokens, most likely first, that is usually short: sort a
    // growing prefix (the largest `sorted`, in the order a full sort gives them) until the cut falls
    // inside it, rather than sorting the whole vocabulary.
    for (std::size_t sorted = std::min<std::size_t>(keep, 256);; sorted = std::min(keep, sorted * 8)) {
      if (sorted < keep) std::nth_element(begin, begin + sorted, candidates_.end(), more_likely);
      std::sort(begin, begin + sorted, more_likely);
      if (sorted == keep) break;
      const bool min_p_cut = min_p_ > 0.0f && candidates_[sorted - 1].first < min_p_ * candidates_[0].first;
      float mass = 0.0f;
      for (std::size_t i = 0; i < sorted; ++i) mass += candidates_[i].first;
      const bool top_p_cut = top_p_ < 1.0f && mass >= top_p_ * sum;
      if (min_p_cut || top_p_cut) {
        keep = sorted;
        break;
      }
    }
  }
  if (min_p_ > 0.0f) {
    const float floor = min_p_ * candidates_[0].first;
    std::size_t k = 1;
    while (k < keep && candidates_[k].first >= floor) ++k;
    keep = k;
  }
  if (top_p_ < 1.0f) {
    const float target = top_p_ * sum;
    float cumulative = 0.0f;
    std::size_t k = 0;
    while (k < keep) {
      cumulative += candidates_[k].first;
      ++k;
      if (cumulative >= target) break;
    }
    keep = k;
  }
  return keep;
}

token_id sampler::sample_at_temperature(const float* logits, int n) {
  const std::size_t keep = keep_candidates(logits, n);
  // Without truncation the draw walks the vocabulary in id order: no sort at all.
  float mass = 0.0f;
  for (std::size_t i = 0; i < keep; ++i) mass += candidates_[i].first;
  const float r = std::uniform_real_distribution<float>(0.0f, mass)(rng_);
  float cumulative = 0.0f;
  for (std::size_t i = 0; i < keep; ++i) {
    cumulative += candidates_[i].first;
    if (r < cumulative) return candidates_[i].second;
  }
  return candidates_[keep - 1].second;
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
  const std::size_t keep = keep_candidates(logits, n);
  float mass = 0.0f;
  for (std::size_t i = 0; i < keep; ++i) mass += candidates_[i].first;
  target_.assign(n, 0.0f);
  for (std::size_t i = 0; i < keep; ++i) target_[candidates_[i].second] = candidates_[i].first / mass;
  const token_id chosen = speculative_sample(target_, q, proposed, rng_);
  if (!raw.empty()) fill_logprobs(raw.data(), n, chosen, n_logprobs_, *logprobs_out);
  record(chosen);
  return chosen;
}

}  // namespace pagedserve
