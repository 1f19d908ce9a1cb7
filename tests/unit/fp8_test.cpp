// The fp8 conversions (pagedserve/fp8.hpp) exhaustively over their 256 codes: each code decodes to the
// value its fields spell (computed here with ldexp, not with the header's bit tricks), encoding that
// value gives the code back, midpoints between neighbours round to the even code, and beyond the
// largest finite value encoding saturates instead of storing NaN or infinity. Random floats are
// compared with a brute-force nearest-code search.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "pagedserve/fp8.hpp"

namespace pagedserve {
namespace {

struct format {
  const char* name;
  int n_mant, bias;
  std::uint8_t max_code;
  std::uint8_t (*encode)(float);
  float (*decode)(std::uint8_t);
  // The value code c spells by the OCP spec; NaN for NaN codes, infinity for e5m2's.
  float spelled(std::uint8_t c) const {
    const int n_exp = 7 - n_mant, exp = (c & 0x7f) >> n_mant, mant = c & ((1 << n_mant) - 1);
    const float sign = (c & 0x80) ? -1.0f : 1.0f;
    if (n_mant == 3 && exp == 15 && mant == 7) return std::numeric_limits<float>::quiet_NaN();
    if (n_mant == 2 && exp == (1 << n_exp) - 1) return mant ? std::numeric_limits<float>::quiet_NaN() : sign * INFINITY;
    if (exp == 0) return sign * std::ldexp(static_cast<float>(mant), 1 - bias - n_mant);
    return sign * std::ldexp(1.0f + std::ldexp(static_cast<float>(mant), -n_mant), exp - bias);
  }
  float max_finite() const { return spelled(max_code); }
};

const format e4m3{"e4m3", 3, 7, 0x7e, f32_to_fp8_e4m3, fp8_e4m3_to_f32};
const format e5m2{"e5m2", 2, 15, 0x7b, f32_to_fp8_e5m2, fp8_e5m2_to_f32};

class fp8_test : public testing::TestWithParam<format> {};

TEST_P(fp8_test, every_code_decodes_to_the_value_it_spells) {
  const format& f = GetParam();
  for (int c = 0; c < 256; ++c) {
    SCOPED_TRACE(c);
    const float want = f.spelled(static_cast<std::uint8_t>(c)), got = f.decode(static_cast<std::uint8_t>(c));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got));
    } else {
      EXPECT_EQ(got, want);
      EXPECT_EQ(std::signbit(got), (c & 0x80) != 0);  // -0 stays -0
    }
  }
  EXPECT_EQ(f.max_finite(), f.n_mant == 3 ? 448.0f : 57344.0f);
  EXPECT_EQ(f.decode(1), f.n_mant == 3 ? 0x1p-9f : 0x1p-16f);  // the smallest subnormal
}

TEST_P(fp8_test, encoding_a_decoded_value_gives_its_code) {
  const format& f = GetParam();
  for (int c = 0; c < 256; ++c) {
    const float v = f.decode(static_cast<std::uint8_t>(c));
    if (std::isfinite(v)) {
      EXPECT_EQ(f.encode(v), c) << c;
    }
  }
}

// Between neighbouring codes: the midpoint goes to the one with an even code (mantissa lsb 0), a float
// either side of it to the nearer one; the subnormal range and the step into the normals included.
TEST_P(fp8_test, midpoints_round_to_even) {
  const format& f = GetParam();
  for (int c = 0; c < f.max_code; ++c) {
    for (float sign : {1.0f, -1.0f}) {
      const float lo = f.decode(static_cast<std::uint8_t>(c)), hi = f.decode(static_cast<std::uint8_t>(c + 1));
      const float mid = (lo + hi) / 2;  // exact: a few bits more than fp8 has
      const std::uint8_t s = sign < 0 ? 0x80 : 0;
      SCOPED_TRACE(std::to_string(c) + (sign < 0 ? " negative" : ""));
      EXPECT_EQ(f.encode(sign * mid), s | (c % 2 == 0 ? c : c + 1));
      EXPECT_EQ(f.encode(sign * std::nextafter(mid, 0.0f)), s | c);
      EXPECT_EQ(f.encode(sign * std::nextafter(mid, INFINITY)), s | (c + 1));
    }
  }
}

// vLLM's scale 1.0 cache saturates: anything past the largest finite value stores it, never infinity
// or NaN; NaN stays NaN.
TEST_P(fp8_test, saturates_beyond_the_largest_finite_value) {
  const format& f = GetParam();
  const float max = f.max_finite();
  for (float x : {max, std::nextafter(max, INFINITY), max * 1.04f, max * 1.5f, max * 1000.0f,
                  std::numeric_limits<float>::max(), INFINITY}) {
    SCOPED_TRACE(x);
    EXPECT_EQ(f.encode(x), f.max_code);
    EXPECT_EQ(f.encode(-x), 0x80 | f.max_code);
  }
  EXPECT_TRUE(std::isnan(f.decode(f.encode(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(f.decode(f.encode(-std::numeric_limits<float>::quiet_NaN()))));
  // Below half the smallest subnormal (and fp32 subnormals): zero of the input's sign.
  const float tiny = f.decode(1);
  for (float x : {tiny / 2, tiny / 3, std::numeric_limits<float>::denorm_min(), 0.0f}) {
    EXPECT_EQ(f.encode(x), 0) << x;
    EXPECT_EQ(f.encode(-x), 0x80) << x;
  }
}

// Random floats over the whole exponent range against a search for the nearest code (ties to even),
// with saturation; none of them stores a non-finite value.
TEST_P(fp8_test, random_floats_round_to_the_nearest_code) {
  const format& f = GetParam();
  std::vector<float> values;  // the non-negative finite codes' values, ascending with the code
  for (int c = 0; c <= f.max_code; ++c) values.push_back(f.decode(static_cast<std::uint8_t>(c)));
  auto nearest = [&](float a) {
    if (a >= values.back()) return static_cast<int>(f.max_code);
    int best = 0;
    for (int c = 1; c < static_cast<int>(values.size()); ++c) {
      const float d = std::abs(a - values[c]), d_best = std::abs(a - values[best]);
      if (d < d_best || (d == d_best && c % 2 == 0)) best = c;
    }
    return best;
  };
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> exponent(-30.0f, 20.0f), mantissa(1.0f, 2.0f);
  for (int i = 0; i < 20000; ++i) {
    const float x = std::ldexp(mantissa(rng), static_cast<int>(exponent(rng))) * (i % 2 ? -1.0f : 1.0f);
    const std::uint8_t got = f.encode(x);
    ASSERT_EQ(got, (x < 0 ? 0x80 : 0) | nearest(std::abs(x))) << x;
    ASSERT_TRUE(std::isfinite(f.decode(got))) << x;
  }
}

INSTANTIATE_TEST_SUITE_P(formats, fp8_test, testing::Values(e4m3, e5m2),
                         [](const testing::TestParamInfo<format>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace pagedserve
