// The panel layout of ggml_block_panels.hpp: where each row's block lives, and the moves between it
// and the file's row-after-row blocks.
#include "model/ggml_block_panels.hpp"

#include <cstring>
#include <span>

#include "model/ggml_blocks.hpp"

namespace pagedserve {
namespace {

// Bytes of one quad block of t.
constexpr std::size_t quad_bytes(dtype t) { return block_panel_quad * static_cast<std::size_t>(block_layout_of(t).bytes); }

// Start of the quad block holding block b of row `row` (nb blocks per row): q4_0's quads interleave
// block by block, q4_k's follow one another (each quad's super-blocks one sequential run).
std::size_t quad_offset(dtype t, int nb, int row, int b) {
  const std::size_t panel = static_cast<std::size_t>(row / block_panel_rows);
  const int quad = row % block_panel_rows / block_panel_quad, n_quads = block_panel_rows / block_panel_quad;
  if (block_panel_quads_follow(t)) return ((panel * n_quads + quad) * nb + b) * quad_bytes(t);
  return ((panel * nb + b) * n_quads + quad) * quad_bytes(t);
}

// One field of a block: `bytes` bytes at `from` in the file's block go to `to + row_step * i` in the
// quad block, i being the row's place in its quad.
struct field_move {
  int from, bytes, to, row_step;
};

// q4_0 (72-byte quad): d at 2 i; the 16 bytes of nibbles at 8 + 16 i.
constexpr field_move q4_0_fields[] = {{0, 2, 0, 2}, {2, 16, 8, 16}};
// q4_k (576-byte quad): d at 2 i, dmin at 8 + 2 i; the 12 packed scale bytes as three 16-byte vectors
// of 4 bytes per row (16, 32, 48); then for each 32-byte run c of qs (sub-blocks 2c and 2c + 1), its
// first 16 bytes of the 4 rows (64 + 128 c + 16 i), then its last 16 (64 + 128 c + 64 + 16 i).
constexpr field_move q4_k_fields[] = {{0, 2, 0, 2},   {2, 2, 8, 2},    {4, 4, 16, 4},   {8, 4, 32, 4},
                                      {12, 4, 48, 4}, {16, 16, 64, 16}, {32, 16, 128, 16}, {48, 16, 192, 16},
                                      {64, 16, 256, 16}, {80, 16, 320, 16}, {96, 16, 384, 16}, {112, 16, 448, 16},
                                      {128, 16, 512, 16}};

// q8_0 (136-byte quad): d at 2 i; weights 0..15 at 8 + 16 i, 16..31 at 72 + 16 i.
constexpr field_move q8_0_fields[] = {{0, 2, 0, 2}, {2, 16, 8, 16}, {18, 16, 72, 16}};

// q5_k (704-byte quad): q4_k's fields (its qs 32 bytes further into the file's block), then qh: its
// first 16 bytes of the 4 rows (576 + 16 i), its last 16 (640 + 16 i).
constexpr field_move q5_k_fields[] = {{0, 2, 0, 2},   {2, 2, 8, 2},    {4, 4, 16, 4},   {8, 4, 32, 4},
                                      {12, 4, 48, 4}, {48, 16, 64, 16}, {64, 16, 128, 16}, {80, 16, 192, 16},
                                      {96, 16, 256, 16}, {112, 16, 320, 16}, {128, 16, 384, 16}, {144, 16, 448, 16},
                                      {160, 16, 512, 16}, {16, 16, 576, 16}, {32, 16, 640, 16}};

// q6_k (840-byte quad): the file block's 16-byte runs k (ql 0-7, qh 8-11, scales 12) at 64 k + 16 i;
// d at 832 + 2 i.
constexpr field_move q6_k_fields[] = {{0, 16, 0, 16},     {16, 16, 64, 16},   {32, 16, 128, 16},  {48, 16, 192, 16},
                                      {64, 16, 256, 16},  {80, 16, 320, 16},  {96, 16, 384, 16},  {112, 16, 448, 16},
                                      {128, 16, 512, 16}, {144, 16, 576, 16}, {160, 16, 640, 16}, {176, 16, 704, 16},
                                      {192, 16, 768, 16}, {208, 2, 832, 2}};

std::span<const field_move> fields_of(dtype t) {
  if (t == dtype::q4_k) return q4_k_fields;
  if (t == dtype::q5_k) return q5_k_fields;
  if (t == dtype::q6_k) return q6_k_fields;
  if (t == dtype::q8_0) return q8_0_fields;
  return q4_0_fields;
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
      std::byte* quad = out + quad_offset(t, nb, o, b);
      const int i = o % block_panel_quad;
      for (const field_move& f : fields_of(t)) std::memcpy(quad + f.to + f.row_step * i, block + f.from, f.bytes);
    }
}

void block_panels_row(std::byte* out, const weight& w, int row) {
  const block_layout l = block_layout_of(w.type);
  const int nb = w.cols / l.elements;
  const int i = row % block_panel_quad;
  for (int b = 0; b < nb; ++b) {
    const std::byte* quad = static_cast<const std::byte*>(w.data) + quad_offset(w.type, nb, row, b);
    std::byte* block = out + static_cast<std::size_t>(b) * l.bytes;
    for (const field_move& f : fields_of(w.type)) std::memcpy(block + f.from, quad + f.to + f.row_step * i, f.bytes);
  }
}

}  // namespace pagedserve
