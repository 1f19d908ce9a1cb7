// Speculative sampling leaves the output distributed exactly as the target's: many seeded draws on
// small synthetic distributions, compared with the target by a chi-square statistic. The targets and
// proposers differ enough that accepting wrongly (always, or never resampling from the residual)
// gives a statistic hundreds of times the bound.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "pagedserve/sampling.hpp"
#include "sampling/speculative_sampling.hpp"

namespace pagedserve {
namespace {

constexpr int n_draws = 200000;
// 6 categories, 5 degrees of freedom: P(chi2 > 35) < 1e-5, so a seed that passes is no fluke.
constexpr double chi_square_bound = 35.0;

double chi_square(const std::vector<int>& counts, const std::vector<float>& p) {
  double chi2 = 0;
  for (std::size_t t = 0; t < p.size(); ++t) {
    const double expected = n_draws * static_cast<double>(p[t]);
    if (expected == 0) {
      EXPECT_EQ(counts[t], 0) << "token " << t << " has probability 0";
      continue;
    }
    chi2 += (counts[t] - expected) * (counts[t] - expected) / expected;
  }
  return chi2;
}

const std::vector<float> target{0.05f, 0.40f, 0.00f, 0.25f, 0.20f, 0.10f};

TEST(speculative_sampling, a_draft_distribution_q_yields_exactly_the_target_p) {
  const std::vector<float> q{0.30f, 0.05f, 0.20f, 0.05f, 0.30f, 0.10f};
  std::mt19937_64 rng(42);
  std::discrete_distribution<int> draft(q.begin(), q.end());
  std::vector<int> counts(target.size(), 0);
  int accepted = 0;
  for (int i = 0; i < n_draws; ++i) {
    const token_id proposed = draft(rng);
    const token_id t = speculative_sample(target, q, proposed, rng);
    accepted += t == proposed;
    ++counts[t];
  }
  EXPECT_LT(chi_square(counts, target), chi_square_bound);
  // Acceptance is sum(min(p, q)) = 0.05 + 0.05 + 0 + 0.05 + 0.20 + 0.10 = 0.45.
  EXPECT_NEAR(static_cast<double>(accepted) / n_draws, 0.45, 0.01);
}

TEST(speculative_sampling, a_point_mass_proposal_yields_exactly_the_target_p) {
  for (const token_id proposed : {1, 2, 4}) {
    SCOPED_TRACE("proposed " + std::to_string(proposed));
    std::mt19937_64 rng(7 + proposed);
    std::vector<int> counts(target.size(), 0);
    for (int i = 0; i < n_draws; ++i) ++counts[speculative_sample(target, {}, proposed, rng)];
    EXPECT_LT(chi_square(counts, target), chi_square_bound);
  }
}

// The sampler's verification draws from the distribution sample() draws from (temperature, top-k,
// penalties), so a proposal changes nothing but the speed.
TEST(speculative_sampling, sampler_verification_matches_plain_sampling) {
  const std::vector<float> logits{1.0f, 2.5f, -1.0f, 2.0f, 1.8f, 0.3f};
  sampling_params params;
  params.temperature = 0.7f;
  params.top_k = 5;  // token 2 (the least likely) is cut
  // The target: softmax(logits / 0.7) over the top 5.
  std::vector<float> p(logits.size(), 0.0f);
  double z = 0;
  for (std::size_t t = 0; t < logits.size(); ++t)
    if (t != 2) z += std::exp(logits[t] / 0.7);
  for (std::size_t t = 0; t < logits.size(); ++t)
    if (t != 2) p[t] = static_cast<float>(std::exp(logits[t] / 0.7) / z);
  for (const int proposed : {-1, 1, 0, 2}) {  // -1: sample() itself
    SCOPED_TRACE("proposed " + std::to_string(proposed));
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < n_draws / 50; ++i) {
      sampler s(params, 1000 * (proposed + 2) + i);  // fresh: no penalties carried over
      for (int k = 0; k < 50; ++k) {
        std::vector<float> row = logits;
        const token_id t = proposed < 0 ? s.sample(row.data(), 6) : s.sample_proposed(row.data(), 6, proposed);
        ++counts[t];
      }
    }
    EXPECT_LT(chi_square(counts, p), chi_square_bound);
  }
}

TEST(speculative_sampling, greedy_verification_is_the_argmax) {
  sampling_params params;
  params.temperature = 0;
  sampler s(params, 1);
  std::vector<float> row{0.1f, 3.0f, 2.0f};
  EXPECT_EQ(s.sample_proposed(row.data(), 3, 2), 1);
  row = {0.1f, 3.0f, 2.0f};
  EXPECT_EQ(s.sample_proposed(row.data(), 3, 1), 1);
}

}  // namespace
}  // namespace pagedserve
