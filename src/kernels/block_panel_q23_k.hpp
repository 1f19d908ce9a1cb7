#pragma once
// q2_k and q3_k over row panels (model/ggml_block_panels.hpp) on zmm with VNNI. A panel block holds, per
// 64 bytes of qs, 4 bytes of each of the panel's 16 rows, one row per 32-bit element; run k = 8n + 4h + r
// holds qs bytes 32n + 16h + 4r.. of every row, whose 2-bit fields at shift 2j are weights
// 128n + 32j + 16h + 4r.. of group g = 8n + 2j + h (16 weights, one scale each). Per group, 4 vpdpbusd
// against the token's matching activations ({1to16} broadcast) give each row its integer dot, which one
// vpdpwssd scales by the row's scale of that group (the 16 rows' scales unpacked together: q3_k's all 16
// once per super-block, q2_k's one group at a time).
// q2_k: weights 0..3, 4-bit scales and mins. Field j is masked in place (4^j x the weight: one vpandd, no
// shift), the group's sum shifted back by 2j (exact) and scaled by vpdpwssd (it fits 16 bits; the scale's
// upper half is 0) instead of vpmulld + add. The mins meet the token's sums per 16 as 16-bit pairs in
// vpdpwssd (panel_q2_k::token_extras), as q4_k's do. q3_k: the hmask bit (one vptestmb per 64 weights) makes the
// weights 0..7 = the file's -4..3 plus 4, fields 0-2 in place as q2_k's (field 3 two bits down, so that the
// + 4 stays in the byte); -4 x the token's group sum starts each group's sum, so it is the signed dot the row
// kernel computes (times the field's power of 4); 6-bit signed scales (minus 32), met in the upper 16 bits
// by vpdpwssd (panel_q3_k::scaled_add).
// fp32: per row, acc += float(isum) * (d * y.d) (q2_k also acc_min += float(imin) * (dmin * y.d), then
// acc - acc_min) super-block after super-block: one sequence whatever the token count, tile or row range.
// Included by the avx512_vnni file only.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "model/ggml_block_panels.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int q23_k_panel_tokens = 4;

inline __m512i q23_k_broadcast4(const void* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// q2_k's panel block (1344 bytes): d at 2i, dmin at 32 + 2i, scale bytes 4s..4s+3 at 64 + 64s + 4i
// (s < 4; low nibble scale, high nibble min), qs bytes 4k..4k+3 at 320 + 64k + 4i (k < 16).
struct panel_q2_k {
  static constexpr std::size_t block_bytes = 16 * 84;
  static constexpr int qs_at = 320;
  static constexpr bool has_min = true, has_hmask = false;
  static constexpr int extra_per_block = 8;  // min pairs
  // Its scales are read per group from the block (L1): unpacking them once per super-block, as q3_k's,
  // holds 4 more registers and measured slower here.
  static void scales(const std::byte*, __m512i*) {}
  // Group g's 4-bit scale, a row per element.
  static __m512i scale(const std::byte* block, const __m512i*, int g) {
    const __m512i run = _mm512_loadu_si512(block + 64 + 64 * (g / 4));
    return _mm512_and_si512(_mm512_srli_epi32(run, 8 * (g % 4)), _mm512_set1_epi32(0xF));
  }
  static __m512i chain_start(const std::int32_t*, int) { return _mm512_setzero_si512(); }
  // Field j in place: 4^j x the weight, one vpandd and no shift.
  static __m512i weight(__m512i v, __m512i, int, int j) {
    return _mm512_and_si512(v, _mm512_set1_epi8(static_cast<char>(3 << 2 * j)));
  }
  // isum + the group's sum (4^j x its dot: shifted back exactly, then |dot| <= 16 x 3 x 128 fits 16 bits)
  // x the scale (upper half 0) in one vpdpwssd.
  static __m512i scaled_add(__m512i isum, __m512i chain, __m512i scale, int j) {
    return _mm512_dpwssd_epi32(isum, _mm512_srai_epi32(chain, 2 * j), scale);
  }
  static void token_extras(std::int32_t* extra, const act_block256& y);  // the mins' activation pairs
};

// q3_k's panel block (1760 bytes): d at 2i; the 12 packed scale bytes at 32 + 64s + 4i (s < 3); hmask
// bytes 4m..4m+3 at 224 + 64m + 4i (m < 8); qs bytes 4k..4k+3 at 736 + 64k + 4i (k < 16).
struct panel_q3_k {
  static constexpr std::size_t block_bytes = 16 * 110;
  static constexpr int qs_at = 736, hmask_at = 224;
  static constexpr bool has_min = false, has_hmask = true;
  static constexpr int extra_per_block = 16;  // -4 x the token's group sums
  // The 16 groups' scales minus 32 as signed bytes (k3_scales): byte b of s[q]'s element i is row i's
  // scale of group g = 4q + b: nibble g / 8 of packed byte g % 8, below bits 2q, 2q + 1 of byte 8 + b.
  static void scales(const std::byte* block, __m512i* s) {
    const __m512i packed0 = _mm512_loadu_si512(block + 32), packed4 = _mm512_loadu_si512(block + 96);
    const __m512i high = _mm512_loadu_si512(block + 160), nibble = _mm512_set1_epi8(0xF), bits45 = _mm512_set1_epi8(0x30);
    const __m512i low[4] = {_mm512_and_si512(packed0, nibble), _mm512_and_si512(packed4, nibble),
                            _mm512_and_si512(_mm512_srli_epi16(packed0, 4), nibble),
                            _mm512_and_si512(_mm512_srli_epi16(packed4, 4), nibble)};
    // Bits 2q, 2q + 1 of each byte to bits 4, 5 (16-bit shifts: what crosses from the next byte is masked).
    const __m512i top[4] = {_mm512_slli_epi16(high, 4), _mm512_slli_epi16(high, 2), high, _mm512_srli_epi16(high, 2)};
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q)
      s[q] = _mm512_sub_epi8(_mm512_ternarylogic_epi32(low[q], top[q], bits45, 0xF8), _mm512_set1_epi8(32));
  }
  // Group g's scale sign-extended into the upper 16 bits of each row's element (the lower 16 are left
  // over: scaled_add's sum is 0 there).
  static __m512i scale(const std::byte*, const __m512i* s, int g) {
    const __m512i byte_in_upper_half = g % 4 == 3   ? s[g / 4]
                                       : g % 4 == 2 ? _mm512_slli_epi16(s[g / 4], 8)
                                                    : _mm512_slli_epi32(s[g / 4], 16 + 8 * (1 - g % 4));
    return _mm512_srai_epi16(byte_in_upper_half, 8);
  }
  static __m512i chain_start(const std::int32_t* minus_offset, int g) { return _mm512_set1_epi32(minus_offset[g]); }
  // Field j at 4^e_j x its value (e_j = 0, 2, 4, 4: field 3 moved down 2 bits so that the + 4 stays a
  // byte), plus 4^e_j x 4 where its hmask bit 4n + j is set.
  static constexpr int field_exponent(int j) { return j == 3 ? 4 : 2 * j; }
  static __m512i weight(__m512i v, __m512i hm, int n, int j) {
    const __m512i field = j == 3 ? _mm512_and_si512(_mm512_srli_epi16(v, 2), _mm512_set1_epi8(0x30))
                                 : _mm512_and_si512(v, _mm512_set1_epi8(static_cast<char>(3 << 2 * j)));
    return _mm512_mask_add_epi8(field, _mm512_test_epi8_mask(hm, _mm512_set1_epi8(static_cast<char>(1 << (4 * n + j)))),
                                field, _mm512_set1_epi8(static_cast<char>(4 << field_exponent(j))));
  }
  // The group's sum is 4^e_j x its signed dot (|dot| <= 16 x 4 x 128): shifted to the upper 16 bits as the
  // dot itself (lower 16 bits 0), it meets the scale there in one vpdpwssd.
  static __m512i scaled_add(__m512i isum, __m512i chain, __m512i scale, int j) {
    return _mm512_dpwssd_epi32(isum, _mm512_slli_epi32(chain, 16 - field_exponent(j)), scale);
  }
  static void token_extras(std::int32_t* extra, const act_block256& y);  // -4 x 4^e_j x the group sums
};

// sums[t * 16 + r] = row r of the panel · token t's activations y[t], t < n_t; extra[t] holds token t's
// F::extra_per_block values per super-block (F::token_extras).
template <class F, int n_t>
void q23_k_panel_dot(float* sums, const std::byte* panel, const act_block256* const* y,
                     const std::int32_t* const* extra, int nb) {
  __m512 acc[n_t], acc_min[n_t];
  for (int t = 0; t < n_t; ++t) acc[t] = acc_min[t] = _mm512_setzero_ps();
  for (int b = 0; b < nb; ++b) {
    const std::byte* block = panel + static_cast<std::size_t>(b) * F::block_bytes;
    __m512i isum[n_t], group_scales[4];
    for (int t = 0; t < n_t; ++t) isum[t] = _mm512_setzero_si512();
    F::scales(block, group_scales);
#pragma GCC unroll 2
    for (int n = 0; n < 2; ++n)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        __m512i v[4], hm[4] = {};
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
          v[r] = _mm512_loadu_si512(block + F::qs_at + 64 * (8 * n + 4 * h + r));
          if constexpr (F::has_hmask) hm[r] = _mm512_loadu_si512(block + F::hmask_at + 64 * (4 * h + r));
        }
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const int g = 8 * n + 2 * j + h;
          __m512i w[4];
#pragma GCC unroll 4
          for (int r = 0; r < 4; ++r) w[r] = F::weight(v[r], hm[r], n, j);
          const __m512i scale = F::scale(block, group_scales, g);
#pragma GCC unroll 4
          for (int t = 0; t < n_t; ++t) {
            const std::int8_t* q = y[t][b].qs + 16 * g;
            __m512i chain = F::chain_start(extra[t] + F::extra_per_block * b, g);
#pragma GCC unroll 4
            for (int r = 0; r < 4; ++r) chain = _mm512_dpbusd_epi32(chain, w[r], q23_k_broadcast4(q + 4 * r));
            isum[t] = F::scaled_add(isum[t], chain, scale, j);
          }
        }
      }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block)));
#pragma GCC unroll 4
    for (int t = 0; t < n_t; ++t) {
      const __m512 yd = _mm512_set1_ps(y[t][b].d);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, yd), acc[t]);
    }
    if constexpr (F::has_min) {
      // Mins as 16-bit pairs per scale run s: (m4s, m4s+2), (m4s+1, m4s+3).
      __m512i min_pair[8];
#pragma GCC unroll 4
      for (int s = 0; s < 4; ++s) {
        const __m512i m = _mm512_and_si512(_mm512_srli_epi16(_mm512_loadu_si512(block + 64 + 64 * s), 4),
                                           _mm512_set1_epi8(0xF));
        min_pair[2 * s] = _mm512_and_si512(m, _mm512_set1_epi16(0xFF));
        min_pair[2 * s + 1] = _mm512_srli_epi16(m, 8);
      }
      const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 32)));
#pragma GCC unroll 4
      for (int t = 0; t < n_t; ++t) {
        const std::int32_t* pairs = extra[t] + F::extra_per_block * b;
        __m512i imin = _mm512_dpwssd_epi32(_mm512_setzero_si512(), min_pair[0], _mm512_set1_epi32(pairs[0]));
#pragma GCC unroll 8
        for (int k = 1; k < 8; ++k) imin = _mm512_dpwssd_epi32(imin, min_pair[k], _mm512_set1_epi32(pairs[k]));
        acc_min[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(imin), _mm512_mul_ps(dmin, _mm512_set1_ps(y[t][b].d)), acc_min[t]);
      }
    }
  }
  for (int t = 0; t < n_t; ++t)
    _mm512_storeu_ps(sums + t * block_panel_rows, F::has_min ? _mm512_sub_ps(acc[t], acc_min[t]) : acc[t]);
}

using q23_k_panel_fn = void (*)(float*, const std::byte*, const act_block256* const*, const std::int32_t* const*, int);
template <class F>
constexpr q23_k_panel_fn q23_k_panel_kernels[q23_k_panel_tokens] = {q23_k_panel_dot<F, 1>, q23_k_panel_dot<F, 2>,
                                                                   q23_k_panel_dot<F, 3>, q23_k_panel_dot<F, 4>};

// q2_k: extra[(t * nb + b) * 8 + 2s + e] = token t's sums over groups (4s + e, 4s + e + 2) of super-block
// b as two 16-bit halves: the partners of the mins' pairs in q23_k_panel_dot.
inline void panel_q2_k::token_extras(std::int32_t* extra, const act_block256& y) {
  const auto half = [&](int g) { return static_cast<std::uint32_t>(static_cast<std::uint16_t>(y.bsums[g])); };
  for (int s = 0; s < 4; ++s)
    for (int e = 0; e < 2; ++e) extra[2 * s + e] = static_cast<std::int32_t>(half(4 * s + e + 2) << 16 | half(4 * s + e));
}
// q3_k: extra[(t * nb + b) * 16 + g] = -4 x 4^e_j x token t's sum over group g = 8n + 2j + h of super-block b.
inline void panel_q3_k::token_extras(std::int32_t* extra, const act_block256& y) {
  for (int g = 0; g < 16; ++g) extra[g] = -(4 << field_exponent(g % 8 / 2)) * y.bsums[g];
}

// kernel_table::matmul_blocks for a panel-packed q2_k or q3_k w (or q6_k: block_panel_q6_k.hpp gives
// its panel_q6_k and q23_k_panel_kernels<panel_q6_k>): every panel touching [o_begin, o_end), all of its
// rows computed, those in the range stored.
template <class F>
void matmul_q23_k_panels(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin, int o_end) {
  const std::size_t x_bytes = activation_row_bytes(w.type, w.cols);
  const int nb = w.cols / 256;
  const std::size_t panel_bytes = static_cast<std::size_t>(nb) * F::block_bytes;
  const std::size_t per_token = static_cast<std::size_t>(nb) * F::extra_per_block;
  thread_local std::vector<std::int32_t> extras;  // grows to the largest call, then reused
  if (extras.size() < n_tokens * per_token) extras.resize(n_tokens * per_token);
  for (int t = 0; t < n_tokens; ++t) {
    const auto* y = reinterpret_cast<const act_block256*>(xq + t * x_bytes);
    for (int b = 0; b < nb; ++b) {
      F::token_extras(extras.data() + t * per_token + static_cast<std::size_t>(b) * F::extra_per_block, y[b]);
    }
  }
  for (int p = o_begin / block_panel_rows; p * block_panel_rows < o_end; ++p) {
    const int first = p * block_panel_rows;
    const int r_begin = std::max(o_begin, first) - first, r_end = std::min(o_end, first + block_panel_rows) - first;
    for (int t = 0; t < n_tokens; t += q23_k_panel_tokens) {
      const int n_t = std::min(q23_k_panel_tokens, n_tokens - t);
      const act_block256* y[q23_k_panel_tokens];
      const std::int32_t* extra[q23_k_panel_tokens];
      for (int i = 0; i < n_t; ++i) {
        y[i] = reinterpret_cast<const act_block256*>(xq + (t + i) * x_bytes);
        extra[i] = extras.data() + (t + i) * per_token;
      }
      float sums[q23_k_panel_tokens * block_panel_rows];
      q23_k_panel_kernels<F>[n_t - 1](sums, static_cast<const std::byte*>(w.data) + p * panel_bytes, y, extra, nb);
      for (int i = 0; i < n_t; ++i)
        for (int r = r_begin; r < r_end; ++r)
          out[static_cast<std::size_t>(t + i) * w.rows + first + r] = sums[i * block_panel_rows + r];
    }
  }
}

}  // namespace
}  // namespace pagedserve::kernels
