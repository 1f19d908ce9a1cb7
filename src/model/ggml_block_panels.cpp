// The panel layout of ggml_block_panels.hpp: where each row's block lives, and the moves between it
// and the file's row-after-row blocks.
#include "model/ggml_block_panels.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>

#include "model/ggml_blocks.hpp"

namespace pagedserve {
namespace {

// Start of the panel block holding block b of row `row` (nb blocks per row): a panel's blocks in order.
std::size_t panel_block_offset(dtype t, int nb, int row, int b) {
  const std::size_t panel = static_cast<std::size_t>(row / block_panel_rows);
  return (panel * nb + b) * block_panel_rows * static_cast<std::size_t>(block_layout_of(t).bytes);
}

// One field of a block: `bytes` bytes at `from` in the file's block go to `to + row_step * i` in the
// panel block, i being the row's place in its panel.
struct field_move {
  int from, bytes, to, row_step;
};

// q4_0 and iq4_nl (288-byte panel block, 16 rows): d at 2 i; bytes 4k..4k+3 of the nibbles at
// 32 + 64 k + 4 i (k < 4): each 64 bytes one zmm holding 4 bytes of every row, one row per 32-bit element.
constexpr field_move q4_0_fields[] = {{0, 2, 0, 2}, {2, 4, 32, 4}, {6, 4, 96, 4}, {10, 4, 160, 4}, {14, 4, 224, 4}};
// q4_1 (320 bytes): d at 2 i, m at 32 + 2 i, the nibbles as q4_0's from 64.
constexpr field_move q4_1_fields[] = {{0, 2, 0, 2},     {2, 2, 32, 2},     {4, 4, 64, 4},
                                      {8, 4, 128, 4},   {12, 4, 192, 4},   {16, 4, 256, 4}};
// q5_0 (352 bytes): d at 2 i, qh at 32 + 4 i (bits transposed: qh_to_panel), the nibbles from 96.
constexpr field_move q5_0_fields[] = {{0, 2, 0, 2},     {2, 4, 32, 4},     {6, 4, 96, 4},
                                      {10, 4, 160, 4},  {14, 4, 224, 4},   {18, 4, 288, 4}};
// q5_1 (384 bytes): d at 2 i, m at 32 + 2 i, qh at 64 + 4 i (transposed), the nibbles from 128.
constexpr field_move q5_1_fields[] = {{0, 2, 0, 2},    {2, 2, 32, 2},    {4, 4, 64, 4},   {8, 4, 128, 4},
                                      {12, 4, 192, 4}, {16, 4, 256, 4},  {20, 4, 320, 4}};
// iq4_xs (2176 bytes): d at 2 i, scales_h at 32 + 2 i, scales_l at 64 + 4 i; then bytes 4k..4k+3 of
// the 128 bytes of nibbles at 128 + 64 k + 4 i (k < 32).
constexpr auto iq4_xs_fields = [] {
  std::array<field_move, 3 + 32> f{{{0, 2, 0, 2}, {2, 2, 32, 2}, {4, 4, 64, 4}}};
  for (int k = 0; k < 32; ++k) f[3 + k] = {8 + 4 * k, 4, 128 + 64 * k, 4};
  return f;
}();
// q4_k (2304-byte panel block, 16 rows): d at 2 i, dmin at 32 + 2 i; the 12 packed scale bytes as
// three runs of 64 bytes, 4 bytes a row (64, 128, 192 + 4 i); then bytes 4k..4k+3 of the 128 bytes of
// nibbles at 256 + 64 k + 4 i (k < 32). The header moves (d, dmin, scales) are q5_k's too.
constexpr field_move k_scales_header[] = {{0, 2, 0, 2}, {2, 2, 32, 2}, {4, 4, 64, 4}, {8, 4, 128, 4}, {12, 4, 192, 4}};
constexpr auto q4_k_fields = [] {
  std::array<field_move, 5 + 32> f{};
  std::ranges::copy(k_scales_header, f.begin());
  for (int k = 0; k < 32; ++k) f[5 + k] = {16 + 4 * k, 4, 256 + 64 * k, 4};
  return f;
}();

// q8_0 (544-byte panel block, 16 rows): d at 2 i; weights 4k..4k+3 at 32 + 64 k + 4 i (k < 8).
constexpr field_move q8_0_fields[] = {{0, 2, 0, 2},      {2, 4, 32, 4},     {6, 4, 96, 4},
                                      {10, 4, 160, 4},   {14, 4, 224, 4},   {18, 4, 288, 4},
                                      {22, 4, 352, 4},   {26, 4, 416, 4},   {30, 4, 480, 4}};

// q5_k (2816 bytes): q4_k's d, dmin and scales; qh bytes 4m..4m+3 at 256 + 64 m + 4 i (m < 8); then bytes
// 4k..4k+3 of the 128 bytes of nibbles at 768 + 64 k + 4 i (k < 32).
constexpr auto q5_k_fields = [] {
  std::array<field_move, 5 + 8 + 32> f{};
  std::ranges::copy(k_scales_header, f.begin());
  for (int m = 0; m < 8; ++m) f[5 + m] = {16 + 4 * m, 4, 256 + 64 * m, 4};
  for (int k = 0; k < 32; ++k) f[13 + k] = {48 + 4 * k, 4, 768 + 64 * k, 4};
  return f;
}();

// q6_k (3360 bytes), in the order its kernel reads it: for each step s = 2n + h (n: super-block half,
// h = 0, 1) and r < 4, with u = 4h + r, ql bytes 64n + 4u..+3 at 832s + 192r + 4i, ql bytes
// 64n + 32 + 4u..+3 at 64 bytes further, qh bytes 32n + 4u..+3 at 128 further; then the step's 4 groups'
// scales, group 8n + 2g + h at 832s + 768 + 16g + i (a byte a row: one vpmovsxbd makes the 16 rows'
// s32 scales); d at 3328 + 2i, last.
constexpr auto q6_k_fields = [] {
  std::array<field_move, 4 * (12 + 4) + 1> f{};
  int k = 0;
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 2; ++h) {
      const int step = 832 * (2 * n + h);
      for (int r = 0; r < 4; ++r) {
        const int u = 4 * h + r;
        f[k++] = {64 * n + 4 * u, 4, step + 192 * r, 4};
        f[k++] = {64 * n + 32 + 4 * u, 4, step + 192 * r + 64, 4};
        f[k++] = {128 + 32 * n + 4 * u, 4, step + 192 * r + 128, 4};
      }
      for (int g = 0; g < 4; ++g) f[k++] = {192 + 8 * n + 2 * g + h, 1, step + 768 + 16 * g, 1};
    }
  f[k] = {208, 2, 3328, 2};
  return f;
}();

// q2_k (1344 bytes): d at 2 i, dmin at 32 + 2 i; scale bytes 4s..4s+3 at 64 + 64 s + 4 i (s < 4); qs
// bytes 4k..4k+3 at 320 + 64 k + 4 i (k < 16).
constexpr auto q2_k_fields = [] {
  std::array<field_move, 6 + 16> f{{{80, 2, 0, 2}, {82, 2, 32, 2}, {0, 4, 64, 4}, {4, 4, 128, 4}, {8, 4, 192, 4}, {12, 4, 256, 4}}};
  for (int k = 0; k < 16; ++k) f[6 + k] = {16 + 4 * k, 4, 320 + 64 * k, 4};
  return f;
}();
// q3_k (1760 bytes): d at 2 i; the 12 scale bytes as three runs (32, 96, 160 + 4 i); then its weights
// re-encoded as 3-bit values (q3_k_triple_*, below) in 8 triples of runs from 224.
constexpr field_move q3_k_fields[] = {{108, 2, 0, 2}, {96, 4, 32, 4}, {100, 4, 96, 4}, {104, 4, 160, 4}};

std::span<const field_move> fields_of(dtype t) {
  if (t == dtype::q2_k) return q2_k_fields;
  if (t == dtype::q3_k) return q3_k_fields;
  if (t == dtype::q4_1) return q4_1_fields;
  if (t == dtype::q5_0) return q5_0_fields;
  if (t == dtype::q5_1) return q5_1_fields;
  if (t == dtype::iq4_xs) return iq4_xs_fields;
  if (t == dtype::q4_k) return q4_k_fields;
  if (t == dtype::q5_k) return q5_k_fields;
  if (t == dtype::q6_k) return q6_k_fields;
  if (t == dtype::q8_0) return q8_0_fields;
  return q4_0_fields;  // q4_0, iq4_nl
}

// q5_0 / q5_1: where the 32-bit qh of row i lies in the panel block (-1: none). In the panel its bits are
// transposed so that bit u of byte k is the fifth bit of weight 4u + k (the file's bit 4u + k): weights
// 4u..4u+3 sit in bytes 0-3 of the kernel's vector u, so one vptestmb against bit u finds their fifth
// bits in place.
int qh_at(dtype t) { return t == dtype::q5_0 ? 32 : t == dtype::q5_1 ? 64 : -1; }

std::uint32_t qh_to_panel(std::uint32_t qh) {
  std::uint32_t out = 0;
  for (int u = 0; u < 8; ++u)
    for (int k = 0; k < 4; ++k) out |= ((qh >> (4 * u + k)) & 1u) << (8 * k + u);
  return out;
}

std::uint32_t qh_from_panel(std::uint32_t panel) {
  std::uint32_t out = 0;
  for (int u = 0; u < 8; ++u)
    for (int k = 0; k < 4; ++k) out |= ((panel >> (8 * k + u)) & 1u) << (4 * u + k);
  return out;
}

// q3_k's weights in the panel: u = the 2 qs bits + 4 x the hmask bit (0..7, the file's -4..3 plus 4) of
// weight 16g + 4r + k (group g, its quad r, byte k) of row i. Triple p (p < 8) holds groups
// g0 = 4 (p / 2) + p % 2 and g0 + 2 (whose scales one vpsraw pairs) in three runs X, Y, Z of 64 bytes at
// 224 + 192p (+ 64, + 128), byte 4i + k of each:
//   X = a | b << 5 | x3 << 3 | x4 << 4,  Y = c | d << 5 | y3 << 3 | y4 << 4,  Z = e | f << 5 | z3 << 3 | z4 << 4
// where a, c, e are group g0's quads 0-2 and b, d, f group g0 + 2's; the 3 bits of g0's quad 3 (pp) are
// (X ^ Z << 2) & 0x38 and of g0 + 2's (qq) (Y ^ Z << 1) & 0x38, which fixes x3, x4, z3 and y3, y4, z4.
// So every weight comes out of the runs with one vpandd or a shift + one vpternlogd
// (block_panel_q3_k.hpp): 96 bytes a row for 256 weights, as the file's qs and hmask.
constexpr int q3_k_triples_at = 224, q3_k_triple_bytes = 192;
constexpr int q3_k_triple_group(int p, int second) { return 4 * (p / 2) + p % 2 + 2 * second; }

// u[w] for the block's 256 weights (ggml's order: weight 128n + 32j + 16h + l is qs byte 32n + 16h + l's
// field j over hmask byte 16h + l's bit 4n + j).
void q3_k_values(int* u, const std::byte* block) {
  for (int n = 0; n < 2; ++n)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l) {
        const int lo2 = (std::to_integer<int>(block[32 + 32 * n + l]) >> 2 * j) & 3;
        const int hb = (std::to_integer<int>(block[l]) >> (4 * n + j)) & 1;
        u[128 * n + 32 * j + l] = lo2 + 4 * hb;
      }
}

void q3_k_set_u(std::byte* block, int w, int u) {
  const int g = w / 16, l = w % 16, n = g / 8, j = g % 8 / 2, h = g % 2;
  block[32 + 32 * n + 16 * h + l] |= static_cast<std::byte>((u & 3) << 2 * j);
  block[16 * h + l] |= static_cast<std::byte>((u >> 2) << (4 * n + j));
}

constexpr int bit(int v, int b) { return (v >> b) & 1; }

void q3_k_weights_to_panel(std::byte* to, const std::byte* block, int i) {
  int values[256];
  q3_k_values(values, block);
  for (int p = 0; p < 8; ++p)
    for (int k = 0; k < 4; ++k) {
      const auto u = [&](int g, int r) { return values[16 * q3_k_triple_group(p, g) + 4 * r + k]; };
      const int a = u(0, 0), c = u(0, 1), e = u(0, 2), pp = u(0, 3), b = u(1, 0), d = u(1, 1), f = u(1, 2), qq = u(1, 3);
      const int z3 = bit(pp, 2) ^ bit(b, 0), z4 = bit(qq, 2) ^ bit(d, 0);
      const int x = a | b << 5 | (bit(pp, 0) ^ bit(e, 1)) << 3 | (bit(pp, 1) ^ bit(e, 2)) << 4;
      const int y = c | d << 5 | (bit(qq, 0) ^ bit(e, 2)) << 3 | (bit(qq, 1) ^ z3) << 4;
      const int z = e | f << 5 | z3 << 3 | z4 << 4;
      std::byte* at = to + q3_k_triples_at + q3_k_triple_bytes * p + 4 * i + k;
      at[0] = static_cast<std::byte>(x);
      at[64] = static_cast<std::byte>(y);
      at[128] = static_cast<std::byte>(z);
    }
}

// block's qs and hmask (zeroed first) from the panel block `from`'s row i.
void q3_k_weights_from_panel(std::byte* block, const std::byte* from, int i) {
  std::memset(block, 0, 96);
  for (int p = 0; p < 8; ++p)
    for (int k = 0; k < 4; ++k) {
      const std::byte* at = from + q3_k_triples_at + q3_k_triple_bytes * p + 4 * i + k;
      const int x = std::to_integer<int>(at[0]), y = std::to_integer<int>(at[64]), z = std::to_integer<int>(at[128]);
      const int pp = (x ^ z << 2) >> 3 & 7, qq = (y ^ z << 1) >> 3 & 7;
      const int u[2][4] = {{x & 7, y & 7, z & 7, pp}, {x >> 5, y >> 5, z >> 5, qq}};
      for (int g = 0; g < 2; ++g)
        for (int r = 0; r < 4; ++r) q3_k_set_u(block, 16 * q3_k_triple_group(p, g) + 4 * r + k, u[g][r]);
    }
}

// The 32 bits at `at` replaced by f of them.
template <class F>
void transform32(std::byte* at, F f) {
  std::uint32_t v;
  std::memcpy(&v, at, 4);
  v = f(v);
  std::memcpy(at, &v, 4);
}

}  // namespace

std::size_t block_panels_bytes(dtype t, int rows, int cols) {
  return static_cast<std::size_t>(block_panel_padded_rows(rows)) * block_row_bytes(t, cols);
}

void block_panels_pack(std::byte* out, const std::byte* stored, dtype t, int rows, int cols) {
  std::memset(out, 0, block_panels_bytes(t, rows, cols));  // padding rows: zero blocks (d = 0)
  const block_layout l = block_layout_of(t);
  const int nb = cols / l.elements;
  for (int o = 0; o < rows; ++o)
    for (int b = 0; b < nb; ++b) {
      const std::byte* block = stored + static_cast<std::size_t>(o) * block_row_bytes(t, cols) + static_cast<std::size_t>(b) * l.bytes;
      std::byte* to = out + panel_block_offset(t, nb, o, b);
      const int i = o % block_panel_rows;
      for (const field_move& f : fields_of(t)) std::memcpy(to + f.to + f.row_step * i, block + f.from, f.bytes);
      if (qh_at(t) >= 0) transform32(to + qh_at(t) + 4 * i, qh_to_panel);
      if (t == dtype::q3_k) q3_k_weights_to_panel(to, block, i);
    }
}

void block_panels_row(std::byte* out, const weight& w, int row) {
  const block_layout l = block_layout_of(w.type);
  const int nb = w.cols / l.elements;
  const int i = row % block_panel_rows;
  for (int b = 0; b < nb; ++b) {
    const std::byte* from = static_cast<const std::byte*>(w.data) + panel_block_offset(w.type, nb, row, b);
    std::byte* block = out + static_cast<std::size_t>(b) * l.bytes;
    for (const field_move& f : fields_of(w.type)) std::memcpy(block + f.from, from + f.to + f.row_step * i, f.bytes);
    if (qh_at(w.type) >= 0) transform32(block + (w.type == dtype::q5_0 ? 2 : 4), qh_from_panel);  // the file's qh
    if (w.type == dtype::q3_k) q3_k_weights_from_panel(block, from, i);
  }
}

}  // namespace pagedserve
