// Sampling: greedy ties, seeded reproducibility, and each filter actually restricting the choice.
#include <gtest/gtest.h>

#include <set>

#include "pagedserve/sampling.hpp"

namespace pagedserve {
namespace {

std::vector<float> logits_ramp(int n) {
  std::vector<float> l(n);
  for (int i = 0; i < n; ++i) l[i] = 0.01f * i;
  return l;
}

std::set<token_id> draws(sampling_params p, int n_draws, std::uint64_t seed = 1) {
  sampler s(p, seed);
  std::set<token_id> seen;
  for (int i = 0; i < n_draws; ++i) {
    auto l = logits_ramp(100);
    seen.insert(s.sample(l.data(), 100));
  }
  return seen;
}

TEST(sampler, greedy_takes_the_lowest_id_among_ties) {
  sampling_params p;
  p.temperature = 0;
  sampler s(p, 1);
  std::vector<float> l = {0.5f, 2.0f, 1.0f, 2.0f};
  EXPECT_EQ(s.sample(l.data(), 4), 1);
}

TEST(sampler, same_seed_same_stream_different_seed_different_stream) {
  sampling_params p;
  p.temperature = 1.0f;
  auto stream = [&](std::uint64_t seed) {
    sampler s(p, seed);
    std::vector<token_id> out;
    for (int i = 0; i < 50; ++i) {
      auto l = logits_ramp(100);
      out.push_back(s.sample(l.data(), 100));
    }
    return out;
  };
  EXPECT_EQ(stream(42), stream(42));
  EXPECT_NE(stream(42), stream(43));
}

TEST(sampler, top_k_top_p_and_min_p_restrict_the_candidates) {
  sampling_params p;
  p.temperature = 1.0f;
  EXPECT_GT(draws(p, 2000).size(), 50u);
  p.top_k = 3;
  EXPECT_EQ(draws(p, 2000), (std::set<token_id>{97, 98, 99}));
  p.top_k = 0;
  p.top_p = 0.05f;  // ramp is nearly flat: ~5% of the mass is the top few tokens
  for (token_id t : draws(p, 2000)) EXPECT_GE(t, 90);
  p.top_p = 1.0f;
  p.temperature = 0.01f;  // sharp: min_p keeps only tokens near the best
  p.min_p = 0.5f;
  for (token_id t : draws(p, 2000)) EXPECT_GE(t, 99);
}

}  // namespace
}  // namespace pagedserve
