// bf16 weights times bf16-rounded activations with AVX512-BF16's vdpbf16ps: 32 weights (one 64-byte
// load) per instruction, where the exact path (table_avx512.cpp) widens 16 weights at a time with a
// zero-extend and a shift before each FMA; on the 2-core test machine that path is compute-bound once
// memory runs past ~55 GB/s. Tiles as in the exact path: up to 4 tokens x 8 (or 6) rows of
// accumulators, row blocks kept in L2 while the token groups pass, the first group prefetching the
// next tile's rows.
// GCC 12's avx512fintrin.h builds its pass-through operands from _mm512_undefined_ps(), which
// -Wuninitialized flags once inlined (GCC PR 105593, fixed in 12.3/13); the warning is spurious.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "avx512_reduce.hpp"
#include "bf16_dot_kernels.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int pair_words = 32;  // bf16 elements per vdpbf16ps

// x[n_tokens, n_in] rounded to bf16 (nearest even), each row zero-padded to k_pad (a multiple of 32).
void round_activations(std::uint16_t* xb, const float* x, int n_tokens, int n_in, int k_pad) {
  for (int t = 0; t < n_tokens; ++t) {
    const float* xt = x + static_cast<std::size_t>(t) * n_in;
    for (int k = 0; k < k_pad; k += pair_words) {
      const __m512 lo = _mm512_maskz_loadu_ps(tail_mask(std::clamp(n_in - k, 0, 16)), xt + k);
      const __m512 hi = _mm512_maskz_loadu_ps(tail_mask(std::clamp(n_in - k - 16, 0, 16)), xt + k + 16);
      _mm512_storeu_si512(xb + static_cast<std::size_t>(t) * k_pad + k, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
    }
  }
}

// n_t tokens x n_r weight rows from row o0.
template <int n_t, int n_r, bool prefetch = false>
void dot_tile(float* out, const std::uint16_t* xb, int k_pad, const std::uint16_t* w, int n_in, int n_out, int o0) {
  __m512 acc[n_t][n_r];
#pragma GCC unroll 8
  for (int t = 0; t < n_t; ++t)
#pragma GCC unroll 8
    for (int r = 0; r < n_r; ++r) acc[t][r] = _mm512_setzero_ps();
  const std::uint16_t* wr[n_r];
  for (int r = 0; r < n_r; ++r) wr[r] = w + static_cast<std::size_t>(o0 + r) * n_in;
  const std::size_t next_tile = static_cast<std::size_t>(n_r) * n_in;
  for (int k = 0; k < n_in; k += pair_words) {
    const int left = n_in - k;
    const __mmask32 m = left >= pair_words ? ~__mmask32{0} : static_cast<__mmask32>((1u << left) - 1u);
    __m512i wv[n_r];
#pragma GCC unroll 8
    for (int r = 0; r < n_r; ++r) {
      if constexpr (prefetch) _mm_prefetch(reinterpret_cast<const char*>(wr[r] + next_tile + k), _MM_HINT_T1);
      wv[r] = _mm512_maskz_loadu_epi16(m, wr[r] + k);
    }
#pragma GCC unroll 8
    for (int t = 0; t < n_t; ++t) {
      const __m512bh xv = reinterpret_cast<__m512bh>(_mm512_loadu_si512(xb + static_cast<std::size_t>(t) * k_pad + k));
#pragma GCC unroll 8
      for (int r = 0; r < n_r; ++r) acc[t][r] = _mm512_dpbf16_ps(acc[t][r], xv, reinterpret_cast<__m512bh>(wv[r]));
    }
  }
  store_reduced(out, n_out, o0, acc);
}

// Rows [o_begin, o_end) for one group of n_t tokens; the first group streams the rows from memory.
template <int n_t>
void dot_token_group(float* out, const std::uint16_t* xb, int k_pad, const std::uint16_t* w, int n_in, int n_out,
                     int o_begin, int o_end, bool first) {
  constexpr int n_r = n_t <= 2 ? 8 : 6;
  int o = o_begin;
  for (; o + n_r <= o_end; o += n_r) {
    if (first) dot_tile<n_t, n_r, true>(out, xb, k_pad, w, n_in, n_out, o);
    else dot_tile<n_t, n_r>(out, xb, k_pad, w, n_in, n_out, o);
  }
  for (; o < o_end; ++o) dot_tile<n_t, 1>(out, xb, k_pad, w, n_in, n_out, o);
}

}  // namespace

namespace detail {

void matmul_rows_bf16_dot(float* out, const float* x, const std::uint16_t* w, int n_tokens, int n_in, int n_out,
                          int o_begin, int o_end) {
  const int k_pad = (n_in + pair_words - 1) / pair_words * pair_words;
  thread_local std::vector<std::uint16_t> xb;
  xb.resize(static_cast<std::size_t>(n_tokens) * k_pad);
  round_activations(xb.data(), x, n_tokens, n_in, k_pad);
  // Blocks of weight rows small enough to stay in L2 while every token group passes over them.
  const int row_block = std::max(8, (128 * 1024 / std::max(n_in, 1)) & ~7);
  for (int ob = o_begin; ob < o_end; ob += row_block) {
    const int oe = std::min(o_end, ob + row_block);
    for (int t = 0; t < n_tokens;) {
      float* ot = out + static_cast<std::size_t>(t) * n_out;
      const std::uint16_t* xt = xb.data() + static_cast<std::size_t>(t) * k_pad;
      switch (std::min(4, n_tokens - t)) {
        case 4: dot_token_group<4>(ot, xt, k_pad, w, n_in, n_out, ob, oe, t == 0); t += 4; break;
        case 3: dot_token_group<3>(ot, xt, k_pad, w, n_in, n_out, ob, oe, t == 0); t += 3; break;
        case 2: dot_token_group<2>(ot, xt, k_pad, w, n_in, n_out, ob, oe, t == 0); t += 2; break;
        default: dot_token_group<1>(ot, xt, k_pad, w, n_in, n_out, ob, oe, t == 0); t += 1; break;
      }
    }
  }
}

}  // namespace detail
}  // namespace pagedserve::kernels
