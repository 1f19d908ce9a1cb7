// The scalar dot products of ggml block-quantized weight rows with quantized activations, one per
// format, written as ggml's generic vec_dot_*_q8_*: weights decoded to small integers, an exact int32
// sum per block (scaled by the integer sub-block scales for the K-quants), then one fp32 multiply-add
// per block in block order. Each output depends on its own row and token only (batch invariance).
#include <cstdint>

#include "block_activations.hpp"
#include "block_formats.hpp"
#include "block_kernels.hpp"
#include "block_rows.hpp"
#include "model/ggml_blocks.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

inline float h(std::uint16_t v) { return f16_to_f32(v); }

// Weights 0..15 in the low nibbles of qs[16], 16..31 in the high ones (q4_0, q4_1, iq4_nl).
inline int nibble(const std::uint8_t* qs, int i) { return i < 16 ? qs[i] & 0xF : qs[i - 16] >> 4; }
// q5_0/q5_1: weight i's fifth bit is bit i of qh.
inline int fifth_bit(const std::uint8_t* qh, int i) { return ((qh[i / 8] >> (i % 8)) & 1) << 4; }

float dot_q4_0(const void* w, const act_block32* y, int nb) {
  const auto* x = static_cast<const block_q4_0*>(w);
  float sum = 0.0f;
  for (int b = 0; b < nb; ++b) {
    int isum = 0;
    for (int i = 0; i < 32; ++i) isum += (nibble(x[b].qs, i) - 8) * y[b].qs[i];
    sum += static_cast<float>(isum) * (h(x[b].d) * y[b].d);
  }
  return sum;
}

float dot_q4_1(const void* w, const act_block32* y, int nb) {
  const auto* x = static_cast<const block_q4_1*>(w);
  float sum = 0.0f;
  for (int b = 0; b < nb; ++b) {
    int isum = 0;
    for (int i = 0; i < 32; ++i) isum += nibble(x[b].qs, i) * y[b].qs[i];
    sum += (h(x[b].d) * y[b].d) * static_cast<float>(isum) + h(x[b].m) * y[b].s;
  }
  return sum;
}

float dot_q5_0(const void* w, const act_block32* y, int nb) {
  const auto* x = static_cast<const block_q5_0*>(w);
  float sum = 0.0f;
  for (int b = 0; b < nb; ++b) {
    int isum = 0;
    for (int i = 0; i < 32; ++i) isum += ((nibble(x[b].qs, i) | fifth_bit(x[b].qh, i)) - 16) * y[b].qs[i];
    sum += static_cast<float>(isum) * (h(x[b].d) * y[b].d);
  }
  return sum;
}

float dot_q5_1(const void* w, const act_block32* y, int nb) {
  const auto* x = static_cast<const block_q5_1*>(w);
  float sum = 0.0f;
  for (int b = 0; b < nb; ++b) {
    int isum = 0;
    for (int i = 0; i < 32; ++i) isum += (nibble(x[b].qs, i) | fifth_bit(x[b].qh, i)) * y[b].qs[i];
    sum += (h(x[b].d) * y[b].d) * static_cast<float>(isum) + h(x[b].m) * y[b].s;
  }
  return sum;
}

float dot_q8_0(const void* w, const act_block32* y, int nb) {
  const auto* x = static_cast<const block_q8_0*>(w);
  float sum = 0.0f;
  for (int b = 0; b < nb; ++b) {
    int isum = 0;
    for (int i = 0; i < 32; ++i) isum += x[b].qs[i] * y[b].qs[i];
    sum += static_cast<float>(isum) * (h(x[b].d) * y[b].d);
  }
  return sum;
}

float dot_iq4_nl(const void* w, const act_block32* y, int nb) {
  const auto* x = static_cast<const block_iq4_nl*>(w);
  float sum = 0.0f;
  for (int b = 0; b < nb; ++b) {
    int isum = 0;
    for (int i = 0; i < 32; ++i) isum += iq4_levels[nibble(x[b].qs, i)] * y[b].qs[i];
    sum += (h(x[b].d) * y[b].d) * static_cast<float>(isum);
  }
  return sum;
}

// K-quants: weight i of a super-block is 128 (i / 128) + 32 j + l with j = (i / 32) % 4, l = i % 32.
float dot_q2_k(const void* w, const act_block256* y, int nb) {
  const auto* x = static_cast<const block_q2_k*>(w);
  float sum = 0.0f;
  for (int b = 0; b < nb; ++b) {
    int isum = 0, imin = 0;
    for (int s = 0; s < 16; ++s) {
      int sub = 0;
      for (int k = 0; k < 16; ++k) {
        const int i = 16 * s + k, half = i / 128, j = (i / 32) % 4, l = i % 32;
        sub += ((x[b].qs[32 * half + l] >> (2 * j)) & 3) * y[b].qs[i];
      }
      isum += (x[b].scales[s] & 0xF) * sub;
      imin += (x[b].scales[s] >> 4) * y[b].bsums[s];
    }
    sum += (y[b].d * h(x[b].d)) * static_cast<float>(isum) - (y[b].d * h(x[b].dmin)) * static_cast<float>(imin);
  }
  return sum;
}

float dot_q3_k(const void* w, const act_block256* y, int nb) {
  const auto* x = static_cast<const block_q3_k*>(w);
  float sum = 0.0f;
  for (int b = 0; b < nb; ++b) {
    std::int8_t scales[16];
    k3_scales(x[b].scales, scales);
    int isum = 0;
    for (int s = 0; s < 16; ++s) {
      int sub = 0;
      for (int k = 0; k < 16; ++k) {
        const int i = 16 * s + k, half = i / 128, j = (i / 32) % 4, l = i % 32;
        const int low = (x[b].qs[32 * half + l] >> (2 * j)) & 3;
        const int high = (x[b].hmask[l] >> (4 * half + j)) & 1;
        sub += (low - (high ? 0 : 4)) * y[b].qs[i];
      }
      isum += scales[s] * sub;
    }
    sum += (h(x[b].d) * y[b].d) * static_cast<float>(isum);
  }
  return sum;
}

// q4_k and q5_k: sub-block j's weights are the low (j even) or high (j odd) nibbles of qs[32 (j / 2) ...].
template <bool five_bits>
float dot_q45_k(const void* w, const act_block256* y, int nb) {
  float sum = 0.0f;
  for (int b = 0; b < nb; ++b) {
    const auto* b4 = static_cast<const block_q4_k*>(w) + b;
    const auto* b5 = static_cast<const block_q5_k*>(w) + b;
    const std::uint8_t* scales = five_bits ? b5->scales : b4->scales;
    const std::uint8_t* qs = five_bits ? b5->qs : b4->qs;
    const std::uint16_t d = five_bits ? b5->d : b4->d, dmin = five_bits ? b5->dmin : b4->dmin;
    int isum = 0, imin = 0;
    for (int j = 0; j < 8; ++j) {
      int scale = 0, min = 0;
      k4_scale_min(scales, j, &scale, &min);
      int sub = 0;
      for (int l = 0; l < 32; ++l) {
        int q = (qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xF;
        if (five_bits) q |= ((b5->qh[l] >> j) & 1) << 4;
        sub += q * y[b].qs[32 * j + l];
      }
      isum += scale * sub;
      imin += min * (y[b].bsums[2 * j] + y[b].bsums[2 * j + 1]);
    }
    sum += (y[b].d * h(d)) * static_cast<float>(isum) - (y[b].d * h(dmin)) * static_cast<float>(imin);
  }
  return sum;
}

float dot_q6_k(const void* w, const act_block256* y, int nb) {
  const auto* x = static_cast<const block_q6_k*>(w);
  float sum = 0.0f;
  for (int b = 0; b < nb; ++b) {
    int isum = 0;
    for (int s = 0; s < 16; ++s) {
      int sub = 0;
      for (int k = 0; k < 16; ++k) {
        const int i = 16 * s + k, half = i / 128, j = (i / 32) % 4, l = i % 32;
        const int low = (x[b].ql[64 * half + 32 * (j % 2) + l] >> (4 * (j / 2))) & 0xF;
        const int high = (x[b].qh[32 * half + l] >> (2 * j)) & 3;
        sub += ((low | high << 4) - 32) * y[b].qs[i];
      }
      isum += x[b].scales[s] * sub;
    }
    sum += (h(x[b].d) * y[b].d) * static_cast<float>(isum);
  }
  return sum;
}

float dot_iq4_xs(const void* w, const act_block256* y, int nb) {
  const auto* x = static_cast<const block_iq4_xs*>(w);
  float sum = 0.0f;
  for (int b = 0; b < nb; ++b) {
    int isum = 0;
    for (int j = 0; j < 8; ++j) {
      int sub = 0;
      for (int i = 0; i < 32; ++i) sub += iq4_levels[nibble(x[b].qs + 16 * j, i)] * y[b].qs[32 * j + i];
      isum += iq4_xs_scale(x[b], j) * sub;
    }
    sum += (h(x[b].d) * y[b].d) * static_cast<float>(isum);
  }
  return sum;
}

// One weight row (n weights of type t) · one token's quantized activations.
float block_dot_scalar(dtype t, const void* w_row, const std::byte* xq, int n) {
  const auto* a32 = reinterpret_cast<const act_block32*>(xq);
  const auto* a256 = reinterpret_cast<const act_block256*>(xq);
  switch (t) {
    case dtype::q4_0: return dot_q4_0(w_row, a32, n / 32);
    case dtype::q4_1: return dot_q4_1(w_row, a32, n / 32);
    case dtype::q5_0: return dot_q5_0(w_row, a32, n / 32);
    case dtype::q5_1: return dot_q5_1(w_row, a32, n / 32);
    case dtype::q8_0: return dot_q8_0(w_row, a32, n / 32);
    case dtype::iq4_nl: return dot_iq4_nl(w_row, a32, n / 32);
    case dtype::q2_k: return dot_q2_k(w_row, a256, n / 256);
    case dtype::q3_k: return dot_q3_k(w_row, a256, n / 256);
    case dtype::q4_k: return dot_q45_k<false>(w_row, a256, n / 256);
    case dtype::q5_k: return dot_q45_k<true>(w_row, a256, n / 256);
    case dtype::q6_k: return dot_q6_k(w_row, a256, n / 256);
    case dtype::iq4_xs: return dot_iq4_xs(w_row, a256, n / 256);
    default: return 0.0f;
  }
}

}  // namespace

void detail::matmul_blocks_scalar(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin,
                                  int o_end) {
  const std::size_t x_bytes = activation_row_bytes(w.type, w.cols);
  for (int o = o_begin; o < o_end; ++o) {
    const void* row = block_row_of(w, o);
    for (int t = 0; t < n_tokens; ++t)
      out[static_cast<std::size_t>(t) * w.rows + o] = block_dot_scalar(w.type, row, xq + t * x_bytes, w.cols);
  }
}

}  // namespace pagedserve::kernels
