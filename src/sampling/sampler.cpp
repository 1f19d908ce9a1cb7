#include <algorithm>
#include <cmath>

#include "pagedserve/sampling.hpp"

namespace pagedserve {

token_id argmax(const float* logits, int n) {
  token_id best = 0;
  for (int i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;  // strict: ties keep the lowest id, as run.c
  return best;
}

sampler::sampler(const sampling_params& p, std::uint64_t seed)
    : temperature_(p.temperature), top_p_(p.top_p), min_p_(p.min_p), top_k_(p.top_k), rng_(seed) {}

token_id sampler::sample(float* logits, int n) {
  if (temperature_ <= 0.0f) return argmax(logits, n);

  // Probabilities at this temperature, most likely first.
  candidates_.resize(n);
  float max_logit = logits[argmax(logits, n)];
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float p = std::exp((logits[i] - max_logit) / temperature_);
    candidates_[i] = {p, i};
    sum += p;
  }
  auto more_likely = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  std::size_t keep = candidates_.size();
  if (top_k_ > 0 && static_cast<std::size_t>(top_k_) < keep) {
    std::partial_sort(candidates_.begin(), candidates_.begin() + top_k_, candidates_.end(), more_likely);
    keep = top_k_;
  } else {
    std::sort(candidates_.begin(), candidates_.end(), more_likely);
  }
  for (auto& c : candidates_) c.first /= sum;
  if (min_p_ > 0.0f) {
    const float floor = min_p_ * candidates_[0].first;
    std::size_t k = 1;
    while (k < keep && candidates_[k].first >= floor) ++k;
    keep = k;
  }
  if (top_p_ < 1.0f) {
    float cumulative = 0.0f;
    std::size_t k = 0;
    while (k < keep) {
      cumulative += candidates_[k].first;
      ++k;
      if (cumulative >= top_p_) break;
    }
    keep = k;
  }
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

}  // namespace pagedserve
