// The per-block scale searches the encoders share (see ggml_block_formats.hpp): for each candidate
// inverse scale, round the block to levels, refit scale (and offset) to those levels by weighted least
// squares, keep the candidate with the least weighted squared error. This is the idea of ggml's
// make_qkx2_quants and make_qx_quants; the closed-form error makes each candidate one pass.
#include <cmath>
#include <cstring>

#include "model/ggml_block_formats.hpp"

namespace pagedserve::ggml_blocks {

void error_weights(float* w, const float* x, int n) {
  float sum_x2 = 0.0f;
  for (int j = 0; j < n; ++j) sum_x2 += x[j] * x[j];
  const float rms = std::sqrt(sum_x2 / static_cast<float>(n));
  for (int j = 0; j < n; ++j) w[j] = rms + std::fabs(x[j]);
}

namespace {

// The sums of a candidate: w l, w l^2 and w l x over a block (n a multiple of 4). Four lanes of GCC's
// and Clang's portable vector extension (SSE2 or NEON), so the loop runs four weights at a time without
// reassociating a single float sum and keeps its sums in registers.
struct level_sums {
  float wl = 0.0f, wl2 = 0.0f, wlx = 0.0f;
};
using f32x4 = float __attribute__((vector_size(16)));

f32x4 load4(const float* p) {
  f32x4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
float lanes_sum(f32x4 v) { return (v[0] + v[1]) + (v[2] + v[3]); }

// nearest_level on four lanes: clamp (NaN -> lo), then round to nearest even by 1.5 * 2^23.
f32x4 nearest_levels(f32x4 v, f32x4 lo, f32x4 hi) {
  const f32x4 magic = f32x4{} + 12582912.0f;
  v = v > lo ? v : lo;
  v = v < hi ? v : hi;
  return (v + magic) - magic;
}

[[gnu::always_inline]] inline level_sums affine_sums(const float* x, const float* w, int n, float lo, float iscale, float top) {
  const f32x4 zero{}, top4 = zero + top;
  f32x4 wl{}, wl2{}, wlx{};
  for (int j = 0; j < n; j += 4) {
    const f32x4 xj = load4(x + j);
    const f32x4 l = nearest_levels((xj - lo) * iscale, zero, top4);
    const f32x4 a = load4(w + j) * l;
    wl += a;
    wl2 += a * l;
    wlx += a * xj;
  }
  return {lanes_sum(wl), lanes_sum(wl2), lanes_sum(wlx)};
}

}  // namespace

// Each candidate's levels are round((x - lo) * iscale); its (scale, offset) is their least-squares fit
// (offset clamped at 0 unless any_offset). The least-squares fit's error is sum w x^2 minus a gain
// num / den (from the sums, in closed form), so candidates compare by cross-multiplying their gains,
// without a division, and only the winner's (scale, offset) is solved for.
affine_fit fit_affine(const float* x, const float* w, int n, int nmax, scale_grid grid, bool any_offset) {
  float lo = x[0], hi = x[0];
  double sw = 0.0, swx = 0.0, swx2 = 0.0;
  for (int j = 0; j < n; ++j) {
    lo = x[j] < lo ? x[j] : lo;
    hi = x[j] > hi ? x[j] : hi;
    sw += w[j];
    swx += static_cast<double>(w[j]) * x[j];
    swx2 += static_cast<double>(w[j]) * x[j] * x[j];
  }
  if (!any_offset) lo = lo < 0.0f ? lo : 0.0f;
  if (!(hi > lo)) return {0.0f, -lo};  // constant block (or NaN): the offset alone reproduces it
  const float range = hi - lo, top = static_cast<float>(nmax);
  // Start from the plain min/max quantizer's (scale, lo), so the search never does worse than it.
  affine_fit best{range / top, -lo};
  double best_num, best_den = 1.0;
  {
    const level_sums s = affine_sums(x, w, n, lo, top / range, top);
    const double scale = best.scale, min = lo;
    const double error = scale * scale * s.wl2 + 2.0 * scale * min * s.wl + min * min * sw - 2.0 * scale * s.wlx -
                         2.0 * min * swx + swx2;
    best_num = swx2 - error;
  }
  level_sums best_sums;
  bool best_clamped = false, searched = false;
  for (int k = 0; k <= grid.n_steps; ++k) {
    const float iscale = (top + grid.first + grid.step * static_cast<float>(k)) / range;
    const level_sums s = affine_sums(x, w, n, lo, iscale, top);
    const double det = sw * s.wl2 - static_cast<double>(s.wl) * s.wl;
    if (!(det > 0.0)) continue;
    const bool clamped = !any_offset && s.wl2 * swx - static_cast<double>(s.wl) * s.wlx > 0.0;  // offset < 0
    const double num = clamped ? static_cast<double>(s.wlx) * s.wlx
                               : sw * s.wlx * s.wlx - 2.0 * swx * s.wl * s.wlx + s.wl2 * swx * swx;
    const double den = clamped ? static_cast<double>(s.wl2) : det;
    if (num * best_den > best_num * den) best_num = num, best_den = den, best_sums = s, best_clamped = clamped, searched = true;
  }
  if (searched) {
    const level_sums& s = best_sums;
    if (best_clamped) return {static_cast<float>(s.wlx / static_cast<double>(s.wl2)), 0.0f};
    const double det = sw * s.wl2 - static_cast<double>(s.wl) * s.wl;
    best = {static_cast<float>((sw * s.wlx - swx * s.wl) / det), static_cast<float>(-(s.wl2 * swx - s.wl * s.wlx) / det)};
  }
  return best;
}

// Candidates: the value of largest magnitude mapped to -(nmax + 0.1 k) for |k| <= 9, each one's
// levels refitted by least squares; the best maximises (sum w x l)^2 / sum w l^2, i.e. minimises the
// squared error.
float fit_symmetric(const float* x, const float* w, int n, int nmax) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
  if (!(amax > 0.0f)) return 0.0f;
  const f32x4 lo4 = f32x4{} - static_cast<float>(nmax), hi4 = f32x4{} + static_cast<float>(nmax - 1);
  float best_scale = -max / static_cast<float>(nmax);  // the plain absmax quantizer's
  double best_gain = -1.0;
  for (int k = -9; k <= 9; ++k) {
    const float iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(k)) / max;
    f32x4 wlx{}, wl2{};
    for (int j = 0; j < n; j += 4) {
      const f32x4 xj = load4(x + j);
      const f32x4 l = nearest_levels(xj * iscale, lo4, hi4);
      const f32x4 a = load4(w + j) * l;
      wlx += a * xj;
      wl2 += a * l;
    }
    const float swlx = lanes_sum(wlx), swl2 = lanes_sum(wl2);
    if (!(swl2 > 0.0f)) continue;
    const double gain = static_cast<double>(swlx) * swlx / swl2;
    if (gain > best_gain) best_gain = gain, best_scale = swlx / swl2;
  }
  return best_scale;
}

}  // namespace pagedserve::ggml_blocks
