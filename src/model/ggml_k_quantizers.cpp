// The K-quants' encoders. Each sub-block (16 or 32 weights) first gets the real-valued scale (and
// offset) that minimises its weighted squared error, searched over a grid of inverse scales around
// the one its extreme values suggest, each candidate's levels then refitted by least squares (the
// idea of ggml's make_qkx2_quants / make_qx_quants). The super-block then quantizes those sub-block
// scales to 4, 6 or 8 bits behind fp16 d (and dmin), and every weight is re-rounded against the scale
// the decoder will actually use.
//
#include <cmath>

#include "model/ggml_block_formats.hpp"

namespace pagedserve::ggml_blocks {
namespace {

constexpr std::size_t qk_k = 256;

// Quantizes sub-block scales s[n] (all >= 0) to integers in [0, top] behind one fp16 factor stored
// at `at`; returns the integers in q.
void quantize_positive_scales(std::byte* at, const float* s, int n, int top, std::uint8_t* q) {
  float max = 0.0f;
  for (int j = 0; j < n; ++j) max = s[j] > max ? s[j] : max;
  const float inv = max > 0.0f ? static_cast<float>(top) / max : 0.0f;
  for (int j = 0; j < n; ++j) q[j] = static_cast<std::uint8_t>(nearest_in(inv * s[j], 0, top));
  store_f16(at, max / static_cast<float>(top));
}

// Levels of x against the decoder's scale d and offset m: round((x + m) / d) in [0, nmax].
void requantize_affine(std::uint8_t* l, const float* x, int n, float d, float m, int nmax) {
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < n; ++j) l[j] = static_cast<std::uint8_t>(nearest_in((x[j] + m) * id, 0, nmax));
}

// Levels of x against the decoder's scale d: round(x / d) in [-nmax, nmax - 1], stored + nmax.
void requantize_symmetric(std::uint8_t* l, const float* x, int n, float d, int nmax) {
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < n; ++j) l[j] = static_cast<std::uint8_t>(nearest_in(x[j] * id, -nmax, nmax - 1) + nmax);
}

// q2_K and q3_K's 2-bit planes: weight 128h + 32c + r goes to bits 2c..2c+1 of qs[32h + r].
void pack_crumbs(std::uint8_t* qs, const std::uint8_t* l) {
  for (int h = 0; h < 2; ++h)
    for (int r = 0; r < 32; ++r) {
      const std::uint8_t* p = l + 128 * h + r;
      qs[32 * h + r] = static_cast<std::uint8_t>((p[0] & 3) | ((p[32] & 3) << 2) | ((p[64] & 3) << 4) | ((p[96] & 3) << 6));
    }
}

// q4_K and q5_K's 12-byte scale/min packing (the inverse of k4_scale_min).
void pack_k_scales(std::uint8_t* s, const std::uint8_t* scale, const std::uint8_t* min) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<std::uint8_t>(scale[j] | ((scale[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<std::uint8_t>(min[j] | ((min[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<std::uint8_t>((scale[j + 4] & 0x0f) | ((min[j + 4] & 0x0f) << 4));
  }
}

// The shared part of q2_K, q4_K and q5_K: fits each of the n_sub sub-blocks, quantizes scales and
// offsets to `scale_top` behind d (at d_at) and dmin (at dmin_at), and returns the levels in l and
// the integer scales and mins in sc and mn.
void quantize_affine_super_block(const float* x, int n_sub, int nmax, scale_grid grid, int scale_top, std::byte* d_at,
                                 std::byte* dmin_at, std::uint8_t* l, std::uint8_t* sc, std::uint8_t* mn) {
  const int sub = static_cast<int>(qk_k) / n_sub;
  float w[32], scale[16], offset[16];
  for (int b = 0; b < n_sub; ++b) {
    error_weights(w, x + sub * b, sub);
    const affine_fit f = fit_affine(x + sub * b, w, sub, nmax, grid, false);
    scale[b] = f.scale;
    offset[b] = f.offset;
  }
  quantize_positive_scales(d_at, scale, n_sub, scale_top, sc);
  quantize_positive_scales(dmin_at, offset, n_sub, scale_top, mn);
  const float d = load_f16(d_at), dmin = load_f16(dmin_at);
  for (int b = 0; b < n_sub; ++b)
    requantize_affine(l + sub * b, x + sub * b, sub, d * static_cast<float>(sc[b]), dmin * static_cast<float>(mn[b]), nmax);
}

}  // namespace

void quantize_q2_k(std::byte* out, const float* x, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, out += 84, x += qk_k) {
    std::uint8_t l[qk_k], sc[16], mn[16];
    quantize_affine_super_block(x, 16, 3, {-0.5f, 0.1f, 15}, 15, out + 80, out + 82, l, sc, mn);
    auto* b = reinterpret_cast<std::uint8_t*>(out);
    for (int j = 0; j < 16; ++j) b[j] = static_cast<std::uint8_t>(sc[j] | (mn[j] << 4));
    pack_crumbs(b + 16, l);
  }
}

void quantize_q4_k(std::byte* out, const float* x, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, out += 144, x += qk_k) {
    std::uint8_t l[qk_k], sc[8], mn[8];
    quantize_affine_super_block(x, 8, 15, {-1.0f, 0.2f, 10}, 63, out, out + 2, l, sc, mn);
    auto* b = reinterpret_cast<std::uint8_t*>(out);
    pack_k_scales(b + 4, sc, mn);
    for (int p = 0; p < 4; ++p)
      for (int r = 0; r < 32; ++r) b[16 + 32 * p + r] = static_cast<std::uint8_t>(l[64 * p + r] | (l[64 * p + 32 + r] << 4));
  }
}

void quantize_q5_k(std::byte* out, const float* x, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, out += 176, x += qk_k) {
    std::uint8_t l[qk_k], sc[8], mn[8];
    quantize_affine_super_block(x, 8, 31, {-0.5f, 0.1f, 15}, 63, out, out + 2, l, sc, mn);
    auto* b = reinterpret_cast<std::uint8_t*>(out);
    pack_k_scales(b + 4, sc, mn);
    std::memset(b + 16, 0, 32);
    for (int p = 0; p < 4; ++p)
      for (int r = 0; r < 32; ++r) {
        const std::uint8_t lo = l[64 * p + r], hi = l[64 * p + 32 + r];
        b[48 + 32 * p + r] = static_cast<std::uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
        b[16 + r] = static_cast<std::uint8_t>(b[16 + r] | ((lo >> 4) << (2 * p)) | ((hi >> 4) << (2 * p + 1)));
      }
  }
}

namespace {

// q3_K and q6_K: the scale of least error of each of a super-block's 16 symmetric sub-blocks of 16
// (levels -nmax .. nmax - 1); returns the largest |scale| and sets *max_scale to that scale, sign kept.
float fit_symmetric_sub_blocks(float* scale, float* max_scale, const float* x, int nmax) {
  float w[16], amax = 0.0f;
  for (int s = 0; s < 16; ++s) {
    error_weights(w, x + 16 * s, 16);
    scale[s] = fit_symmetric(x + 16 * s, w, 16, nmax);
    if (std::fabs(scale[s]) > amax) amax = std::fabs(scale[s]), *max_scale = scale[s];
  }
  return amax;
}

}  // namespace

// q3_K: 16 symmetric sub-blocks of 16 (levels -4..3), signed 6-bit scales behind d.
void quantize_q3_k(std::byte* out, const float* x, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, out += 110, x += qk_k) {
    float scale[16], max_scale = 0.0f;
    const float amax = fit_symmetric_sub_blocks(scale, &max_scale, x, 4);
    auto* b = reinterpret_cast<std::uint8_t*>(out);
    std::memset(b, 0, 110);
    // The largest scale maps to -32 (the side with one more level): d = -max_scale / 32.
    const float d = store_f16(out + 108, amax > 0.0f ? max_scale / -32.0f : 0.0f);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    std::uint8_t l[qk_k];
    for (int s = 0; s < 16; ++s) {
      const int q = nearest_in(scale[s] * id, -32, 31);
      const unsigned stored = static_cast<unsigned>(q + 32);
      b[96 + s % 8] = static_cast<std::uint8_t>(b[96 + s % 8] | ((stored & 0x0f) << (s < 8 ? 0 : 4)));
      b[104 + s % 4] = static_cast<std::uint8_t>(b[104 + s % 4] | ((stored >> 4) << (2 * (s / 4))));
      requantize_symmetric(l + 16 * s, x + 16 * s, 16, d * static_cast<float>(q), 4);
    }
    for (int j = 0; j < static_cast<int>(qk_k); ++j)  // third bit: bit j / 32 of hmask[j % 32]
      if (l[j] & 4) b[j % 32] = static_cast<std::uint8_t>(b[j % 32] | (1u << (j / 32)));
    pack_crumbs(b + 32, l);
  }
}

// q6_K: 16 symmetric sub-blocks of 16 (levels -32..31), int8 scales behind d.
void quantize_q6_k(std::byte* out, const float* x, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, out += 210, x += qk_k) {
    float scale[16], max_scale = 0.0f;
    const float amax = fit_symmetric_sub_blocks(scale, &max_scale, x, 32);
    auto* b = reinterpret_cast<std::uint8_t*>(out);
    const float d = store_f16(out + 208, amax > 0.0f ? max_scale / -128.0f : 0.0f);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    std::uint8_t l[qk_k];
    for (int s = 0; s < 16; ++s) {
      const int q = nearest_in(scale[s] * id, -128, 127);
      b[192 + s] = static_cast<std::uint8_t>(static_cast<std::int8_t>(q));
      requantize_symmetric(l + 16 * s, x + 16 * s, 16, d * static_cast<float>(q), 32);
    }
    for (int h = 0; h < 2; ++h)
      for (int r = 0; r < 32; ++r) {
        const std::uint8_t* p = l + 128 * h + r;
        b[64 * h + r] = static_cast<std::uint8_t>((p[0] & 0x0f) | ((p[64] & 0x0f) << 4));
        b[64 * h + 32 + r] = static_cast<std::uint8_t>((p[32] & 0x0f) | ((p[96] & 0x0f) << 4));
        b[128 + 32 * h + r] = static_cast<std::uint8_t>((p[0] >> 4) | ((p[32] >> 4) << 2) | ((p[64] >> 4) << 4) | ((p[96] >> 4) << 6));
      }
  }
}

}  // namespace pagedserve::ggml_blocks
