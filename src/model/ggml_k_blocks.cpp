// The K-quants' decoders: 256-weight super-blocks of 16 or 8 sub-blocks, each sub-block with a small
// integer scale (and for q2_K, q4_K, q5_K a min) that multiplies the super-block's fp16 d (and dmin).
// Every product is ggml's dequantize_row_*'s, in its order (d * scale first, then times the level,
// then minus dmin * min), so the floats are ggml's to the bit. Layouts in ggml_blocks.hpp; the bit
// positions are spelled out at each decoder.
#include "model/ggml_block_formats.hpp"

namespace pagedserve::ggml_blocks {
namespace {

// q3_K's sixteen 6-bit scales from its 12 bytes: scale j's low nibble is the low (j < 8) or high
// (j >= 8) nibble of byte j % 8, its top two bits are bits 2 * (j / 4) of byte 8 + j % 4.
void q3_k_scales(int* scale, const std::uint8_t* s) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? s[j] & 0x0f : s[j - 8] >> 4;
    const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    scale[j] = (low | (high << 4)) - 32;
  }
}

}  // namespace

// q2_K (84 bytes): scales[16] (low nibble scale, high nibble min, per 16 weights), qs[64], d, dmin.
// Weights 128h + 32c + l (h < 2 halves, c < 4 crumbs, l < 32) are bits 2c..2c+1 of qs[32h + l];
// sub-block 8h + 2c + l / 16.
void dequantize_q2_k(float* __restrict out, const std::byte* __restrict blocks, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, blocks += 84) {
    const auto* scales = reinterpret_cast<const std::uint8_t*>(blocks);
    const auto* qs = scales + 16;
    const float d = load_f16(blocks + 80), dmin = load_f16(blocks + 82);
    int is = 0;
    for (int h = 0; h < 2; ++h, qs += 32)
      for (int shift = 0; shift < 8; shift += 2)
        for (int half = 0; half < 2; ++half) {
          const std::uint8_t sc = scales[is++];
          const float dl = d * static_cast<float>(sc & 0x0f), ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) *out++ = dl * static_cast<float>((qs[16 * half + l] >> shift) & 3) - ml;
        }
  }
}

// q3_K (110 bytes): hmask[32], qs[64], scales[12], d. Weight 128h + 32c + l: low two bits as q2_K's,
// third bit = bit 4h + c of hmask[l]; a clear bit subtracts 4 (levels -4..3). Scales: q3_k_scales.
void dequantize_q3_k(float* __restrict out, const std::byte* __restrict blocks, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, blocks += 110) {
    const auto* hmask = reinterpret_cast<const std::uint8_t*>(blocks);
    const auto* qs = hmask + 32;
    int scale[16];
    q3_k_scales(scale, hmask + 96);
    const float d_all = load_f16(blocks + 108);
    int is = 0;
    std::uint8_t m = 1;
    for (int h = 0; h < 2; ++h, qs += 32)
      for (int shift = 0; shift < 8; shift += 2, m = static_cast<std::uint8_t>(m << 1))
        for (int half = 0; half < 2; ++half) {
          const float dl = d_all * static_cast<float>(scale[is++]);
          for (int l = 16 * half; l < 16 * half + 16; ++l)
            *out++ = dl * static_cast<float>(((qs[l] >> shift) & 3) - ((hmask[l] & m) ? 0 : 4));
        }
  }
}

namespace {

// q4_K (144 bytes): d, dmin, scales[12] (k4_scale_min), qs[128]. Weights 64p + l (l < 32) are the low
// nibbles of qs[32p + l] (sub-block 2p), weights 64p + 32 + l their high nibbles (sub-block 2p + 1).
// q5_K (176 bytes): d, dmin, scales[12], qh[32], qs[128]. As q4_K, plus a fifth bit: weight 64p + l
// has bit 2p of qh[l], weight 64p + 32 + l bit 2p + 1.
template <bool five_bits>
void dequantize_q45_k(float* __restrict out, const std::byte* __restrict blocks, std::size_t n_blocks) {
  constexpr std::size_t block_bytes = five_bits ? 176 : 144;
  for (std::size_t i = 0; i < n_blocks; ++i, blocks += block_bytes) {
    const auto* scales = reinterpret_cast<const std::uint8_t*>(blocks) + 4;
    const auto* qh = scales + 12;  // q5_K only
    const auto* qs = five_bits ? qh + 32 : qh;
    const float d = load_f16(blocks), dmin = load_f16(blocks + 2);
    for (int p = 0; p < 4; ++p, qs += 32, out += 64) {
      int sc, mn;
      k4_scale_min(scales, 2 * p, &sc, &mn);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(mn);
      k4_scale_min(scales, 2 * p + 1, &sc, &mn);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l) {
        const int high = five_bits ? ((qh[l] >> (2 * p)) & 1) << 4 : 0;
        out[l] = d1 * static_cast<float>((qs[l] & 0x0f) | high) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const int high = five_bits ? ((qh[l] >> (2 * p + 1)) & 1) << 4 : 0;
        out[32 + l] = d2 * static_cast<float>((qs[l] >> 4) | high) - m2;
      }
    }
  }
}

}  // namespace

void dequantize_q4_k(float* __restrict out, const std::byte* __restrict blocks, std::size_t n_blocks) {
  dequantize_q45_k<false>(out, blocks, n_blocks);
}

void dequantize_q5_k(float* __restrict out, const std::byte* __restrict blocks, std::size_t n_blocks) {
  dequantize_q45_k<true>(out, blocks, n_blocks);
}

// q6_K (210 bytes): ql[128], qh[64], int8 scales[16] (per 16 weights), d. In half h (128 weights),
// weight 128h + 32c + l takes its low nibble from ql[64h + l] (c = 0: low, c = 2: high) or
// ql[64h + 32 + l] (c = 1: low, c = 3: high), its top two bits from bits 2c..2c+1 of qh[32h + l];
// level - 32; sub-block 8h + 2c + l / 16. ggml multiplies d * scale first, then the level (hoisted
// here: the same product, computed once).
void dequantize_q6_k(float* __restrict out, const std::byte* __restrict blocks, std::size_t n_blocks) {
  for (std::size_t i = 0; i < n_blocks; ++i, blocks += 210) {
    const auto* ql = reinterpret_cast<const std::uint8_t*>(blocks);
    const auto* qh = ql + 128;
    const auto* sc = reinterpret_cast<const std::int8_t*>(qh + 64);
    const float d = load_f16(blocks + 208);
    for (int h = 0; h < 2; ++h, ql += 64, qh += 32, sc += 8, out += 128)
      for (int half = 0; half < 2; ++half) {  // the scales change every 16 weights
        const float d1 = d * static_cast<float>(sc[half]), d2 = d * static_cast<float>(sc[half + 2]);
        const float d3 = d * static_cast<float>(sc[half + 4]), d4 = d * static_cast<float>(sc[half + 6]);
        for (int l = 16 * half; l < 16 * half + 16; ++l) {
          const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
          const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
          const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
          const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
          out[l] = d1 * static_cast<float>(q1);
          out[l + 32] = d2 * static_cast<float>(q2);
          out[l + 64] = d3 * static_cast<float>(q3);
          out[l + 96] = d4 * static_cast<float>(q4);
        }
      }
  }
}

}  // namespace pagedserve::ggml_blocks
