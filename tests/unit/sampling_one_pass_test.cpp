// The sampler's one-pass path (src/sampling/probability_row, candidate_selection) against its
// definition: the AVX-512 and portable passes give the same bits, the exp is accurate, and the kept
// set of top-k / min-p / top-p, in its order, is what sorting the whole row gives, on rows of every
// shape (language-model-like, flat, peaked, tied, with NaN and -inf).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "sampling/candidate_selection.hpp"
#include "sampling/probability_row.hpp"

namespace pagedserve::sampling {
namespace {

std::vector<const probability_kernels*> variants() {
  std::vector<const probability_kernels*> v{&portable_probability_kernels()};
  if (const probability_kernels* avx512 = avx512_probability_kernels()) v.push_back(avx512);
  return v;
}

enum class shape { language_model, flat, peaked, tied, with_nan_and_inf, all_equal };
constexpr shape shapes[] = {shape::language_model, shape::flat,           shape::peaked,
                            shape::tied,           shape::with_nan_and_inf, shape::all_equal};

std::vector<float> row(shape s, int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> l(n);
  for (float& x : l) {
    switch (s) {
      case shape::language_model: x = 2.0f * normal(rng); break;
      case shape::flat: x = 0.01f * normal(rng); break;
      case shape::peaked: x = normal(rng); break;
      case shape::tied: x = static_cast<float>(static_cast<int>(rng() % 4)); break;
      case shape::with_nan_and_inf: x = normal(rng); break;
      case shape::all_equal: x = 0.5f; break;
    }
  }
  if (s == shape::language_model)
    for (int i = 0; i < std::min(n, 20); ++i) l[(i * 7919) % n] = 10.0f - 0.5f * i;
  if (s == shape::peaked) l[rng() % n] = 40.0f;
  if (s == shape::with_nan_and_inf)
    for (int i = 0; i < n; i += 7) l[i] = i % 2 ? std::numeric_limits<float>::quiet_NaN() : -std::numeric_limits<float>::infinity();
  if (s == shape::with_nan_and_inf && n > 1) l[1] = 3.0f;  // a finite maximum
  return l;
}

float finite_max(const std::vector<float>& l) {
  float m = -std::numeric_limits<float>::infinity();
  for (float x : l) m = x > m ? x : m;
  return m;
}

struct probabilities_of {
  std::vector<float> p, block_sums;
  float sum;
  probabilities_of(const probability_kernels& k, const std::vector<float>& logits, float temperature)
      : p(logits.size()), block_sums((logits.size() + 15) / 16) {
    sum = k.probabilities(p.data(), block_sums.data(), logits.data(), static_cast<int>(logits.size()),
                          finite_max(logits), 1.0f / temperature);
  }
};

TEST(sampling_probabilities, avx512_and_portable_give_the_same_bits) {
  const std::vector<const probability_kernels*> v = variants();
  if (v.size() < 2) GTEST_SKIP() << "no AVX-512 on this CPU";
  for (shape s : shapes)
    for (int n : {1, 15, 16, 17, 1000, 32000})
      for (float temperature : {0.05f, 0.8f, 1.0f, 3.0f}) {
        const std::vector<float> logits = row(s, n, n + 3);
        for (const probability_kernels* k : v) ASSERT_EQ(k->row_max(logits.data(), n), finite_max(logits)) << k->name;
        const probabilities_of a(*v[0], logits, temperature), b(*v[1], logits, temperature);
        ASSERT_EQ(std::bit_cast<std::uint32_t>(a.sum), std::bit_cast<std::uint32_t>(b.sum)) << n;
        for (int i = 0; i < n; ++i)
          ASSERT_EQ(std::bit_cast<std::uint32_t>(a.p[i]), std::bit_cast<std::uint32_t>(b.p[i])) << "token " << i;
        for (std::size_t i = 0; i < a.block_sums.size(); ++i)
          ASSERT_EQ(std::bit_cast<std::uint32_t>(a.block_sums[i]), std::bit_cast<std::uint32_t>(b.block_sums[i]));
        int counts[2][n_thresholds];
        float masses[2][n_thresholds];
        const float thresholds[n_thresholds] = {0.0f, 1e-30f, 1e-9f, 1e-4f, 0.01f, 0.2f, 0.7f, 1.0f};
        for (int k = 0; k < 2; ++k) v[k]->stats_above(counts[k], masses[k], a.p.data(), n, thresholds);
        for (int t = 0; t < n_thresholds; ++t) {
          EXPECT_EQ(counts[0][t], counts[1][t]);
          EXPECT_NEAR(masses[0][t], masses[1][t], 2e-4f * a.sum) << "an estimate: within the bound test's margin";
        }
      }
}

TEST(sampling_probabilities, the_row_maximum_skips_nans) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const probability_kernels* k : variants()) {
    const std::vector<float> l = {nan, -3.0f, nan, 2.0f, -inf, nan};
    EXPECT_EQ(k->row_max(l.data(), 6), 2.0f) << k->name;
    const std::vector<float> all_nan(19, nan);
    EXPECT_EQ(k->row_max(all_nan.data(), 19), -inf) << k->name;
  }
}

TEST(sampling_probabilities, exp_is_within_two_ulps_and_zero_below_its_range) {
  for (double x = -87.0; x <= 0.0; x += 0.000731) {
    const float got = exp_nonpositive(static_cast<float>(x));
    const double want = std::exp(static_cast<double>(static_cast<float>(x)));
    ASSERT_NEAR(got, want, 2.5 * std::numeric_limits<float>::epsilon() * want) << "x = " << x;
  }
  EXPECT_EQ(exp_nonpositive(0.0f), 1.0f);
  EXPECT_EQ(exp_nonpositive(-0.0f), 1.0f);
  EXPECT_EQ(exp_nonpositive(-88.0f), 0.0f);
  EXPECT_EQ(exp_nonpositive(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(exp_nonpositive(std::numeric_limits<float>::quiet_NaN()), 0.0f);
}

// The definition: every token sorted most likely first (ties by lower id), then top-k, min-p's floor
// (relative to the first) and top-p's mass (a running total in that order against top_p * sum).
std::vector<std::pair<float, token_id>> sorted_row(const std::vector<float>& p) {
  std::vector<std::pair<float, token_id>> c;
  for (int i = 0; i < static_cast<int>(p.size()); ++i) c.emplace_back(p[i], i);
  std::sort(c.begin(), c.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  return c;
}

std::size_t reference_keep(const std::vector<std::pair<float, token_id>>& c, float sum, const cut_params& cut) {
  std::size_t keep = c.size();
  if (cut.top_k > 0 && static_cast<std::size_t>(cut.top_k) < keep) keep = cut.top_k;
  if (cut.min_p > 0) {
    std::size_t k = 1;
    while (k < keep && c[k].first >= cut.min_p * c[0].first) ++k;
    keep = k;
  }
  if (cut.top_p < 1) {
    float cumulative = 0;
    std::size_t k = 0;
    while (k < keep) {
      cumulative += c[k++].first;
      if (cumulative >= cut.top_p * sum) break;
    }
    keep = k;
  }
  return keep;
}

TEST(candidate_selection, keeps_what_sorting_the_whole_row_keeps_in_the_same_order) {
  int checked = 0;
  for (const probability_kernels* k : variants())
    for (shape s : shapes)
      for (int n : {37, 1000, 32000}) {
        const std::vector<float> logits = row(s, n, 11 * n + static_cast<int>(s));
        const probabilities_of prob(*k, logits, 0.8f);
        const auto sorted = sorted_row(prob.p);
        kept_candidates got;
        for (int top_k : {0, 1, 40, 1000, n + 5})
          for (float top_p : {1.0f, 0.999f, 0.95f, 0.5f, 0.01f})
            for (float min_p : {0.0f, 1e-6f, 0.05f, 0.5f}) {
              const cut_params cut{top_k, top_p, min_p};
              if (!cut.truncates(n)) continue;
              select_kept(got, prob.p.data(), n, prob.sum, cut, *k);
              const std::size_t want = reference_keep(sorted, prob.sum, cut);
              ASSERT_EQ(got.kept, want) << k->name << " n " << n << " shape " << static_cast<int>(s) << " top_k "
                                        << top_k << " top_p " << top_p << " min_p " << min_p;
              for (std::size_t i = 0; i < want; ++i) {
                ASSERT_EQ(got.id[i], sorted[i].second) << "rank " << i;
                ASSERT_EQ(got.p[i], sorted[i].first) << "rank " << i;
              }
              ++checked;
            }
      }
  EXPECT_GT(checked, 1000);
}

TEST(candidate_selection, the_draw_walks_running_totals_block_by_block) {
  std::vector<float> p(50, 0.0f);
  p[3] = 1.0f, p[20] = 2.0f, p[41] = 1.0f;
  std::vector<float> block_sums;
  EXPECT_EQ(draw_mass(block_sums, p.data(), p.size()), 4.0f);
  EXPECT_EQ(draw_index(p.data(), p.size(), block_sums, 0.0f), 3u);
  EXPECT_EQ(draw_index(p.data(), p.size(), block_sums, 0.999f), 3u);
  EXPECT_EQ(draw_index(p.data(), p.size(), block_sums, 1.0f), 20u);
  EXPECT_EQ(draw_index(p.data(), p.size(), block_sums, 2.999f), 20u);
  EXPECT_EQ(draw_index(p.data(), p.size(), block_sums, 3.0f), 41u);
  EXPECT_EQ(draw_index(p.data(), p.size(), block_sums, 4.0f), 41u) << "past the total: the last positive";
  // Block sums in the order a vector register folds them: the same as the portable pass writes.
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (float& x : p) x = u(rng);
  const std::vector<float> logits(p.begin(), p.end());
  for (const probability_kernels* k : variants()) {
    const probabilities_of prob(*k, logits, 1.0f);
    std::vector<float> again;
    draw_mass(again, prob.p.data(), prob.p.size());
    EXPECT_EQ(again, prob.block_sums) << k->name;
  }
}

}  // namespace
}  // namespace pagedserve::sampling
