#pragma once
// ggml's weight blocks as the kernels read them (ggml_blocks.hpp lists the formats), and the small
// decoders their dot products share: the packed 6-bit scales of q4_k/q5_k and q3_k, and iq4's table.
#include <cstdint>
#include <cstring>

namespace pagedserve::kernels {

struct block_q4_0 { std::uint16_t d; std::uint8_t qs[16]; };
struct block_q4_1 { std::uint16_t d, m; std::uint8_t qs[16]; };
struct block_q5_0 { std::uint16_t d; std::uint8_t qh[4]; std::uint8_t qs[16]; };
struct block_q5_1 { std::uint16_t d, m; std::uint8_t qh[4]; std::uint8_t qs[16]; };
struct block_q8_0 { std::uint16_t d; std::int8_t qs[32]; };
struct block_q2_k { std::uint8_t scales[16]; std::uint8_t qs[64]; std::uint16_t d, dmin; };
struct block_q3_k { std::uint8_t hmask[32]; std::uint8_t qs[64]; std::uint8_t scales[12]; std::uint16_t d; };
struct block_q4_k { std::uint16_t d, dmin; std::uint8_t scales[12]; std::uint8_t qs[128]; };
struct block_q5_k { std::uint16_t d, dmin; std::uint8_t scales[12]; std::uint8_t qh[32]; std::uint8_t qs[128]; };
struct block_q6_k { std::uint8_t ql[128]; std::uint8_t qh[64]; std::int8_t scales[16]; std::uint16_t d; };
struct block_iq4_nl { std::uint16_t d; std::uint8_t qs[16]; };
struct block_iq4_xs { std::uint16_t d, scales_h; std::uint8_t scales_l[4]; std::uint8_t qs[128]; };

static_assert(sizeof(block_q4_0) == 18 && sizeof(block_q4_1) == 20 && sizeof(block_q5_0) == 22);
static_assert(sizeof(block_q5_1) == 24 && sizeof(block_q8_0) == 34 && sizeof(block_q2_k) == 84);
static_assert(sizeof(block_q3_k) == 110 && sizeof(block_q4_k) == 144 && sizeof(block_q5_k) == 176);
static_assert(sizeof(block_q6_k) == 210 && sizeof(block_iq4_nl) == 18 && sizeof(block_iq4_xs) == 136);

// iq4_nl/iq4_xs's 16 non-linear levels.
inline constexpr std::int8_t iq4_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// q4_k/q5_k: the 6-bit scale and min of sub-block j (32 weights) from the 12 packed bytes.
inline void k4_scale_min(const std::uint8_t* s, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// All 8 scales and mins of a q4_k/q5_k block at once, as k4_scale_min gives them, one per byte (scale
// or min j in byte j): the low 6 bits of bytes 0-3 (scales 0-3) and 4-7 (mins 0-3); for 4-7, a nibble
// of bytes 8-11 below the top 2 bits of bytes 0-3 (scales) or 4-7 (mins). Kept in registers: no
// store of parts reloaded whole.
inline void k4_scales_mins(const std::uint8_t* s, std::uint64_t* scales, std::uint64_t* mins) {
  std::uint32_t v[3];
  std::memcpy(v, s, 12);
  const std::uint32_t low6 = 0x3f3f3f3fu, nibble = 0x0f0f0f0fu, top2 = 0x30303030u;
  *scales = (v[0] & low6) | static_cast<std::uint64_t>((v[2] & nibble) | ((v[0] >> 2) & top2)) << 32;
  *mins = (v[1] & low6) | static_cast<std::uint64_t>(((v[2] >> 4) & nibble) | ((v[1] >> 2) & top2)) << 32;
}

// q3_k: its 16 6-bit scales (one per 16 weights), unpacked and minus 32.
inline void k3_scales(const std::uint8_t* packed, std::int8_t* out) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? packed[j] & 0xF : packed[j - 8] >> 4;
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = static_cast<std::int8_t>((low | high << 4) - 32);
  }
}

// iq4_xs: the scale of sub-block j (32 weights), minus 32.
inline int iq4_xs_scale(const block_iq4_xs& b, int j) {
  return (((b.scales_l[j / 2] >> 4 * (j % 2)) & 0xF) | (((b.scales_h >> 2 * j) & 3) << 4)) - 32;
}

}  // namespace pagedserve::kernels
