#pragma once
// Helpers every kernel test file shares: random inputs, the reduction-aware error bound, and the
// list of kernel tables this CPU runs (the parameter of each per-ISA suite).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {

inline std::vector<float> random_vector(std::size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// Elementwise |got - want| <= rel * sqrt(n_reduce) * (|want| + rms(want)): rounding of an n-term
// reduction grows like sqrt(n), and the rms term keeps outputs that cancel to ~0 from failing.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, int n_reduce, float rel = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  double ss = 0.0;
  for (float v : want) ss += static_cast<double>(v) * v;
  const double rms = want.empty() ? 0.0 : std::sqrt(ss / want.size());
  const double bound_scale = rel * std::sqrt(static_cast<double>(std::max(n_reduce, 1)));
  int n_bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(static_cast<double>(got[i]) - want[i]);
    if (!(err <= bound_scale * (std::abs(want[i]) + rms)) && ++n_bad <= 5)
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i] << " (err " << err << ")";
  }
  EXPECT_EQ(n_bad, 0) << "of " << got.size() << " elements";
}

inline std::vector<const kernel_table*> supported_tables() {
  const auto tables = kernel_tables_supported();
  return {tables.begin(), tables.end()};
}

}  // namespace pagedserve::kernels
