#pragma once
// The loop nest every SIMD kernel_table::matmul_i8 shares, over a policy P that says how one
// instruction set holds and multiplies a panel's groups of 4 columns (weight.hpp's i8 layout):
//   P::max_tokens, P::max_panels   the register block of one micro-kernel (tokens x panels)
//   P::acc                         the int32 sums of one (token, panel): its 16 rows
//   P::wvec P::load_w(p)           one panel's 64 bytes of one group of columns
//   P::xvec P::load_x(p)           one token's 4 activation bytes of that group, broadcast
//   P::step(acc, wvec, xvec)       acc + the 4 products of each row
//   P::store(out, acc, row_sums, w_scales, x_scale, n_rows)
//                                  out[r] = float(acc[r] - 128 * row_sums[r]) * (w_scales[r] * x_scale), r < n_rows
// Integer sums are exact, so the blocking changes the speed, never the bits.
// Internal linkage on purpose: each table's file compiles it with its own ISA flags.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

using i8_tile_fn = void (*)(float* out, const std::uint8_t* xq, const float* x_scales, const weight& w, int k_pad,
                            int t0, int p0, std::ptrdiff_t prefetch_ahead);

// Tokens [t0, t0 + n_t) x panels [p0, p0 + n_p): every accumulator stays in a register while the
// groups of columns stream by; each weight load feeds n_t tokens, each activation broadcast n_p panels.
// Each weight line is also prefetched into L2 prefetch_ahead bytes on (the same place in the next block
// of panels), so the next block arrives from memory while this one is computed from L2; 0 asks again
// for the line being loaded, a no-op.
template <class P, int n_t, int n_p>
void i8_tile(float* out, const std::uint8_t* xq, const float* x_scales, const weight& w, int k_pad, int t0, int p0,
             std::ptrdiff_t prefetch_ahead) {
  const std::size_t panel_bytes = static_cast<std::size_t>(i8_panel_rows) * k_pad;
  const std::int8_t* wp = w.i8() + static_cast<std::size_t>(p0) * panel_bytes;
  const std::uint8_t* xt = xq + static_cast<std::size_t>(t0) * k_pad;
  typename P::acc acc[n_t][n_p];
#pragma GCC unroll 8
  for (int t = 0; t < n_t; ++t)
#pragma GCC unroll 8
    for (int p = 0; p < n_p; ++p) acc[t][p] = P::zero();
  for (int g = 0; g < k_pad; g += 4) {
    typename P::wvec wv[n_p];
#pragma GCC unroll 8
    for (int p = 0; p < n_p; ++p) {
      const std::int8_t* at = wp + p * panel_bytes + static_cast<std::size_t>(g) * i8_panel_rows;
      __builtin_prefetch(at + prefetch_ahead, 0, 2);  // a hint: never faults, even past the weights
      wv[p] = P::load_w(at);
    }
#pragma GCC unroll 8
    for (int t = 0; t < n_t; ++t) {
      const typename P::xvec xv = P::load_x(xt + static_cast<std::size_t>(t) * k_pad + g);
#pragma GCC unroll 8
      for (int p = 0; p < n_p; ++p) acc[t][p] = P::step(acc[t][p], wv[p], xv);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < n_t; ++t)
#pragma GCC unroll 8
    for (int p = 0; p < n_p; ++p) {
      const int o = (p0 + p) * i8_panel_rows;
      P::store(out + static_cast<std::size_t>(t0 + t) * w.rows + o, acc[t][p], w.row_sums + o, w.scales + o,
               x_scales[t0 + t], std::min(i8_panel_rows, w.rows - o));
    }
}

template <class P, int n_t, int... p>
constexpr std::array<i8_tile_fn, sizeof...(p)> i8_tile_row(std::integer_sequence<int, p...>) {
  return {i8_tile<P, n_t, p + 1>...};
}

// tiles[n_t - 1][n_p - 1] for every block up to P's.
template <class P, int... t>
constexpr std::array<std::array<i8_tile_fn, P::max_panels>, sizeof...(t)> i8_tile_table(std::integer_sequence<int, t...>) {
  return {i8_tile_row<P, t + 1>(std::make_integer_sequence<int, P::max_panels>{})...};
}

// kernel_table::matmul_i8 over P's micro-kernels.
template <class P>
void matmul_i8_tiles(float* out, const std::uint8_t* xq, const float* x_scales, const weight& w, int n_tokens,
                     int p_begin, int p_end) {
  static constexpr auto tiles = i8_tile_table<P>(std::make_integer_sequence<int, P::max_tokens>{});
  const int k_pad = i8_padded_cols(w.cols);
  // Blocks of panels small enough to stay in L2 (256 KiB) while every group of tokens passes over them.
  const int block = std::max(1, 256 * 1024 / (i8_panel_rows * k_pad) / P::max_panels) * P::max_panels;
  const std::ptrdiff_t block_bytes = static_cast<std::ptrdiff_t>(block) * i8_panel_rows * k_pad;
  for (int pb = p_begin; pb < p_end; pb += block) {
    const int pe = std::min(p_end, pb + block);
    for (int t = 0; t < n_tokens; t += P::max_tokens) {
      const int n_t = std::min(P::max_tokens, n_tokens - t);
      for (int p = pb; p < pe; p += P::max_panels) {
        const int n_p = std::min(P::max_panels, pe - p);
        // Never past the range: those panels are another thread's, or not weights at all.
        const std::ptrdiff_t ahead = p + block + n_p <= p_end ? block_bytes : 0;
        tiles[n_t - 1][n_p - 1](out, xq, x_scales, w, k_pad, t, p, ahead);
      }
    }
  }
}

// quantize_token_u8 once max|x| is known: the multiplier 127 / max|x| for the SIMD loop, or, when
// there is none (x zero or too small to invert, or not finite), xq[n_pad] all 128 and the scale
// to return (0, or NaN for an infinite or NaN x) in *degenerate_scale. Same rules as the reference.
inline bool i8_token_inverse(float max_abs, std::uint8_t* xq, int n_pad, float* inv, float* degenerate_scale) {
  *inv = 127.0f / max_abs;
  if (std::isfinite(max_abs) && std::isfinite(*inv)) return true;
  std::fill(xq, xq + n_pad, std::uint8_t{128});
  *degenerate_scale = std::isfinite(max_abs) ? 0.0f : std::numeric_limits<float>::quiet_NaN();
  return false;
}

}  // namespace
}  // namespace pagedserve::kernels
