// kv_quantize_row_q8 (how a row enters the q8 K/V cache): each element nearbyint(x * 127 / max|x|),
// ties to even, and the scale max|x| / 127, on random rows and on rows of exact ties.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kv/kv_cache.hpp"

namespace pagedserve {
namespace {

void expect_nearbyint_rounding(const std::vector<float>& x) {
  std::vector<std::int8_t> q(x.size());
  const float scale = kv_quantize_row_q8(q.data(), x.data(), static_cast<int>(x.size()));
  float amax = 0.0f;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  EXPECT_EQ(scale, amax / 127.0f);
  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  for (std::size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(q[i], static_cast<std::int8_t>(std::nearbyint(x[i] * inv))) << "element " << i << " = " << x[i];
}

TEST(kv_quantize_row_q8, rounds_as_nearbyint_on_random_rows) {
  std::mt19937 rng(5);
  for (int n : {1, 7, 64, 128, 131})
    for (float range : {1e-3f, 1.0f, 300.0f}) {
      std::uniform_real_distribution<float> dist(-range, range);
      std::vector<float> x(n);
      for (float& v : x) v = dist(rng);
      expect_nearbyint_rounding(x);
    }
  expect_nearbyint_rounding(std::vector<float>(64, 0.0f));  // scale 0, all zeros
}

TEST(kv_quantize_row_q8, breaks_ties_to_even) {
  // max|x| = 127 makes the multiplier exactly 1, so every k + 0.5 below is a tie.
  std::vector<float> x = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, -126.5f, 63.5f, -64.5f, 3.0f};
  expect_nearbyint_rounding(x);
  std::vector<std::int8_t> q(x.size());
  kv_quantize_row_q8(q.data(), x.data(), static_cast<int>(x.size()));
  EXPECT_EQ(q[1], 0);
  EXPECT_EQ(q[2], 2);
  EXPECT_EQ(q[3], 2);
  EXPECT_EQ(q[6], -2);
  EXPECT_EQ(q[7], 126);
}

}  // namespace
}  // namespace pagedserve
