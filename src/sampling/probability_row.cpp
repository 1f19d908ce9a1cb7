#include "sampling/probability_row.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "sampling/exp_constants.hpp"

namespace pagedserve::sampling {

float exp_nonpositive(float x) {
  if (!(x >= exp_constants::lowest)) return 0.0f;  // underflow, or NaN
  const float n = std::nearbyint(x * exp_constants::log2e);
  float r = std::fma(n, -exp_constants::ln2_hi, x);
  r = std::fma(n, -exp_constants::ln2_lo, r);
  float y = std::fma(exp_constants::c0, r, exp_constants::c1);
  y = std::fma(y, r, exp_constants::c2);
  y = std::fma(y, r, exp_constants::c3);
  y = std::fma(y, r, exp_constants::c4);
  y = std::fma(y, r, exp_constants::c5);
  y = std::fma(y, r * r, r);
  y = y + 1.0f;
  const float scale = std::bit_cast<float>((static_cast<std::int32_t>(n) + 127) << 23);
  return y * scale;
}

float block_sum(const float* p, int count) {
  float s[probability_lanes] = {};
  std::copy(p, p + std::min(count, probability_lanes), s);
  for (int half = probability_lanes / 2; half > 0; half /= 2)
    for (int i = 0; i < half; ++i) s[i] += s[i + half];
  return s[0];
}

namespace {

float row_max_portable(const float* logits, int n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < n; ++i) m = logits[i] > m ? logits[i] : m;
  return m;
}

float probabilities_portable(float* p, float* block_sums, const float* logits, int n, float max_logit,
                             float inv_temperature) {
  float lanes[probability_lanes] = {};
  for (int i = 0; i < n; ++i) {
    p[i] = exp_nonpositive((logits[i] - max_logit) * inv_temperature);
    lanes[i % probability_lanes] += p[i];
  }
  for (int b = 0; block_sums && b * probability_lanes < n; ++b)
    block_sums[b] = block_sum(p + b * probability_lanes, n - b * probability_lanes);
  float sum = 0.0f;
  for (float lane : lanes) sum += lane;
  return sum;
}

void stats_above_portable(int* counts, float* masses, const float* p, int n, const float* thresholds) {
  double mass[n_thresholds] = {};
  for (int t = 0; t < n_thresholds; ++t) counts[t] = 0;
  for (int i = 0; i < n; ++i)
    for (int t = 0; t < n_thresholds; ++t)
      if (p[i] >= thresholds[t]) ++counts[t], mass[t] += p[i];
  for (int t = 0; t < n_thresholds; ++t) masses[t] = static_cast<float>(mass[t]);
}

int collect_above_portable(float* values, token_id* ids, const float* p, int n, float threshold) {
  int k = 0;
  for (int i = 0; i < n; ++i)
    if (p[i] >= threshold) values[k] = p[i], ids[k++] = i;
  return k;
}

}  // namespace

const probability_kernels& portable_probability_kernels() {
  static const probability_kernels k{row_max_portable, probabilities_portable, stats_above_portable, collect_above_portable, "portable"};
  return k;
}

const probability_kernels& best_probability_kernels() {
  static const probability_kernels& best = []() -> const probability_kernels& {
    const probability_kernels* avx512 = avx512_probability_kernels();
    return avx512 ? *avx512 : portable_probability_kernels();
  }();
  return best;
}

}  // namespace pagedserve::sampling
