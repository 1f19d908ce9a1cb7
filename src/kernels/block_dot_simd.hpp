#pragma once
// The SIMD block-quantized matmul every x86 table shares: each format's kernels for 1..block_dot_tokens tokens
// (block_dot_legacy.hpp, block_dot_k.hpp; 256-bit, with the including file's flags) and the loop over
// rows and tokens. Integer sums are exact, so only the fp32 accumulation has an order: per token, a
// fixed sequence of multiply-adds per block in block order, then a fixed tree over the lanes. That
// sequence is the same whichever of the 1..block_dot_tokens token kernels runs it, so results do not
// depend on the batch, the token's position in it, or the rows a call covers.
#include <algorithm>
#include <cstdint>
#include <utility>

#include "block_dot_k.hpp"
#include "block_dot_legacy.hpp"
#include "block_kernels.hpp"
#include "block_rows.hpp"
#include "model/ggml_blocks.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

// Up to this many tokens share one decode of each weight block: the K-quants' groups, 8 with AVX-512's
// 32 vector registers (the decoded super-block and 8 tokens' accumulators stay in them), 4 with AVX2's
// 16. The 32-weight formats keep groups of 4 (dot32's two accumulators per token would spill at 8).
#if defined(__AVX512F__)
constexpr int block_dot_tokens = 8;
#else
constexpr int block_dot_tokens = 4;
#endif
constexpr int block_dot_tokens_32 = 4;

using block_dot_fn = void (*)(float* sums, const void* row, const std::byte* y0, std::size_t y_stride, int nb);

template <class F, int n_t>
void dot32_of(float* sums, const void* row, const std::byte* y0, std::size_t y_stride, int nb) {
  dot32<F, n_t>(sums, static_cast<const typename F::block*>(row), y0, y_stride, nb);
}

// One format's kernels: by_tokens[n_t - 1] for n_t <= group_tokens tokens.
struct block_dot_kernels {
  int group_tokens;
  block_dot_fn by_tokens[block_dot_tokens];
};

template <class F, std::size_t... i>
constexpr block_dot_kernels legacy_kernels(std::index_sequence<i...>) {
  return {sizeof...(i), {dot32_of<F, i + 1>...}};
}
template <class F>
constexpr block_dot_kernels legacy_kernels() {
  return legacy_kernels<F>(std::make_index_sequence<block_dot_tokens_32>());
}
template <class F, std::size_t... i>
constexpr block_dot_kernels k_kernels(std::index_sequence<i...>) {
  return {sizeof...(i), {dot_k<F, i + 1>...}};
}
template <class F>
constexpr block_dot_kernels k_kernels() {
  return k_kernels<F>(std::make_index_sequence<block_dot_tokens>());
}

inline const block_dot_kernels& simd_kernels(dtype t) {
  static constexpr block_dot_kernels q4_0 = legacy_kernels<fmt_q4_0>(), q4_1 = legacy_kernels<fmt_q4_1>(),
                                     q5_0 = legacy_kernels<fmt_q5_0>(), q5_1 = legacy_kernels<fmt_q5_1>(),
                                     q8_0 = legacy_kernels<fmt_q8_0>(), iq4_nl = legacy_kernels<fmt_iq4_nl>(),
                                     q2_k = k_kernels<fmt_q2_k>(), q3_k = k_kernels<fmt_q3_k>(),
                                     q4_k = k_kernels<fmt_q45_k<false>>(), q5_k = k_kernels<fmt_q45_k<true>>(),
                                     q6_k = k_kernels<fmt_q6_k>(), iq4_xs = k_kernels<fmt_iq4_xs>();
  switch (t) {
    case dtype::q4_0: return q4_0;
    case dtype::q4_1: return q4_1;
    case dtype::q5_0: return q5_0;
    case dtype::q5_1: return q5_1;
    case dtype::q8_0: return q8_0;
    case dtype::iq4_nl: return iq4_nl;
    case dtype::q2_k: return q2_k;
    case dtype::q3_k: return q3_k;
    case dtype::q4_k: return q4_k;
    case dtype::q5_k: return q5_k;
    case dtype::q6_k: return q6_k;
    default: return iq4_xs;
  }
}

// Rows per tile of matmul_blocks_simd: 16 rows of a 5632-wide q8_0 matrix are 96 KB, in L2.
constexpr int block_rows_per_tile = 16;

// kernel_table::matmul_blocks over w's kernels k. Tiles of rows; in each, every group of tokens runs
// over the tile's rows, so the group's activations stay in L1 while the rows come from L2 (a decode
// step, one group, streams each row once from memory).
inline void matmul_blocks_simd(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end,
                               const block_dot_kernels& k) {
  const std::size_t x_bytes = activation_row_bytes(w.type, w.cols);
  const int nb = w.cols / block_layout_of(w.type).elements;
  for (int tile = o_begin; tile < o_end; tile += block_rows_per_tile) {
    const int tile_end = std::min(o_end, tile + block_rows_per_tile);
    for (int t = 0; t < n_tokens; t += k.group_tokens) {
      const int n_t = std::min(k.group_tokens, n_tokens - t);
      for (int o = tile; o < tile_end; ++o) {
        float sums[block_dot_tokens];
        k.by_tokens[n_t - 1](sums, block_row_of(w, o), xq + t * x_bytes, x_bytes, nb);
        for (int i = 0; i < n_t; ++i) out[static_cast<std::size_t>(t + i) * w.rows + o] = sums[i];
      }
    }
  }
}

}  // namespace
}  // namespace pagedserve::kernels
