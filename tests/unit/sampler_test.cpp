// Sampling: greedy ties, seeded reproducibility, and each filter actually restricting the choice.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "pagedserve/sampling.hpp"
#include "sampling/candidate_selection.hpp"
#include "sampling/probability_row.hpp"

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

// top_p / min_p by the definition: every token sorted most likely first (ties by id), with its
// probability at the temperature (the sampler's vectorised exp, the same bits on every ISA); keep the
// prefix min_p's floor and top_p's mass allow; draw from it by the sampler's running totals.
class reference_sampler {
 public:
  reference_sampler(float top_p, float min_p, std::uint64_t seed) : top_p_(top_p), min_p_(min_p), rng_(seed) {}
  token_id sample(const std::vector<float>& logits) {
    const int n = static_cast<int>(logits.size());
    const float max_logit = *std::max_element(logits.begin(), logits.end());
    std::vector<float> p(n), block_sums((n + 15) / 16);
    const float sum =
        sampling::portable_probability_kernels().probabilities(p.data(), block_sums.data(), logits.data(), n, max_logit, 1.0f);
    std::vector<std::pair<float, token_id>> c;
    for (int i = 0; i < n; ++i) c.emplace_back(p[i], i);
    std::sort(c.begin(), c.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    std::size_t keep = c.size();
    if (min_p_ > 0) {
      std::size_t k = 1;
      while (k < keep && c[k].first >= min_p_ * c[0].first) ++k;
      keep = k;
    }
    if (top_p_ < 1) {
      float cumulative = 0;
      std::size_t k = 0;
      while (k < keep && cumulative < top_p_ * sum) cumulative += c[k++].first;
      keep = k;
    }
    std::vector<float> kept(keep);
    for (std::size_t i = 0; i < keep; ++i) kept[i] = c[i].first;
    const float mass = sampling::draw_mass(block_sums, kept.data(), keep);
    const float r = std::uniform_real_distribution<float>(0.0f, mass)(rng_);
    return c[sampling::draw_index(kept.data(), keep, block_sums, r)].second;
  }

 private:
  float top_p_, min_p_;
  std::mt19937_64 rng_;
};

// Logits shaped like a model's: a few likely tokens over a long tail of 32000.
std::vector<float> lm_logits(std::uint64_t seed, float tail_spread) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> tail(0.0f, tail_spread);
  std::vector<float> l(32000);
  for (float& x : l) x = tail(rng);
  for (int i = 0; i < 10; ++i) l[(i * 7919 + seed) % l.size()] = 9.0f - i * 0.5f;
  return l;
}

// The sampler sorts only as much of the vocabulary as the cut needs; whatever it sorts, it must
// draw exactly what the definition draws with the same random numbers, whether the cut falls in the
// first 256 tokens (peaked logits) or far beyond (flat ones).
TEST(sampler, top_p_and_min_p_draw_exactly_as_the_definition) {
  struct setting { float top_p, min_p, spread; };
  for (const setting& c : {setting{0.9f, 0, 1.0f}, setting{0.9f, 0, 4.0f}, setting{0.999f, 0, 2.0f},
                           setting{1.0f, 0.05f, 1.0f}, setting{1.0f, 0.001f, 3.0f}, setting{0.95f, 0.01f, 2.0f}}) {
    const std::vector<float> logits = lm_logits(3, c.spread);
    sampling_params p;
    p.temperature = 1.0f, p.top_p = c.top_p, p.min_p = c.min_p;
    sampler s(p, 11);
    reference_sampler ref(c.top_p, c.min_p, 11);
    std::set<token_id> drawn;
    for (int i = 0; i < 60; ++i) {
      std::vector<float> l = logits;
      const token_id t = s.sample(l.data(), static_cast<int>(l.size()));
      ASSERT_EQ(t, ref.sample(logits)) << "top_p " << c.top_p << " min_p " << c.min_p << " spread " << c.spread
                                      << ", draw " << i;
      drawn.insert(t);
    }
    EXPECT_GT(drawn.size(), 3u) << "the settings keep more than a handful of tokens";
  }
}

// Without truncation the draw walks the vocabulary unsorted: frequencies still follow softmax.
TEST(sampler, untruncated_draws_follow_the_softmax) {
  const std::vector<float> logits = {1.0f, 0.0f, 2.0f, -1.0f, 0.5f};
  sampling_params p;
  p.temperature = 0.7f;
  sampler s(p, 5);
  std::vector<int> count(logits.size());
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    std::vector<float> l = logits;
    ++count[s.sample(l.data(), static_cast<int>(l.size()))];
  }
  double z = 0;
  for (float x : logits) z += std::exp(x / 0.7);
  for (std::size_t i = 0; i < logits.size(); ++i)
    EXPECT_NEAR(count[i] / double(n), std::exp(logits[i] / 0.7) / z, 0.005) << "token " << i;
}

// Non-finite logits, as a constraint's mask or a broken model leaves them: NaN and -inf are never
// drawn, +inf is certain, and a row with no finite maximum falls back to the argmax.
TEST(sampler, nan_and_infinite_logits_are_never_drawn_and_never_crash) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float top_p : {1.0f, 0.9f}) {
    sampling_params p;
    p.temperature = 0.8f, p.top_p = top_p;
    sampler s(p, 3);
    for (int i = 0; i < 200; ++i) {
      std::vector<float> l = {nan, -inf, 1.0f, nan, 0.5f, -inf};
      const token_id t = s.sample(l.data(), 6);
      EXPECT_TRUE(t == 2 || t == 4) << t;
    }
    std::vector<float> with_inf = {0.0f, inf, 1.0f, nan};
    EXPECT_EQ(s.sample(with_inf.data(), 4), 1);
    std::vector<float> all_masked(5, -inf);
    EXPECT_EQ(s.sample(all_masked.data(), 5), 0);
  }
}

// Logprobs by the definition: log-softmax in double precision, the k largest logits by a full sort
// (ties by lower id), on model-like rows, tied rows (many equal logits straddling the k-th) and flat ones.
TEST(sampler, logprobs_are_the_log_softmax_and_the_k_largest_logits) {
  std::mt19937_64 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int shape = 0; shape < 3; ++shape)
    for (int k : {0, 1, 5, 20, 2000}) {
      std::vector<float> logits(1000);
      for (float& x : logits) x = shape == 0 ? 2.0f * normal(rng) : shape == 1 ? static_cast<float>(rng() % 5) : 0.001f * normal(rng);
      sampling_params p;
      p.temperature = 0.8f, p.top_p = 0.9f, p.logprobs = k;
      sampler s(p, 4);
      std::vector<float> l = logits;
      token_logprobs got;
      const token_id chosen = s.sample(l.data(), static_cast<int>(l.size()), &got);
      double z = 0;
      const double max = *std::max_element(logits.begin(), logits.end());
      for (float x : logits) z += std::exp(x - max);
      const double log_z = max + std::log(z);
      EXPECT_NEAR(got.logprob, logits[chosen] - log_z, 1e-5);
      std::vector<token_id> ids(logits.size());
      for (int i = 0; i < static_cast<int>(ids.size()); ++i) ids[i] = i;
      std::sort(ids.begin(), ids.end(), [&](token_id a, token_id b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
      ASSERT_EQ(got.top.size(), std::min<std::size_t>(k, logits.size())) << "shape " << shape;
      for (std::size_t i = 0; i < got.top.size(); ++i) {
        ASSERT_EQ(got.top[i].first, ids[i]) << "shape " << shape << " k " << k << " rank " << i;
        EXPECT_NEAR(got.top[i].second, logits[ids[i]] - log_z, 1e-5);
      }
    }
}

}  // namespace
}  // namespace pagedserve
