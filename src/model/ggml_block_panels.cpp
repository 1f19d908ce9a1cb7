// The panel layout of ggml_block_panels.hpp: where each row's block lives, and the moves between it
// and the file's row-after-row blocks.
#include "model/ggml_block_panels.hpp"

#include <cstring>

#include "model/ggml_blocks.hpp"

namespace pagedserve {
namespace {

// Bytes of one quad block of t.
constexpr std::size_t quad_bytes(dtype t) { return block_panel_quad * static_cast<std::size_t>(block_layout_of(t).bytes); }

// Start of the quad block holding block b of row `row` (nb blocks per row).
std::size_t quad_offset(dtype t, int nb, int row, int b) {
  const std::size_t panel = static_cast<std::size_t>(row / block_panel_rows);
  const int quad = row % block_panel_rows / block_panel_quad;
  return ((panel * nb + b) * (block_panel_rows / block_panel_quad) + quad) * quad_bytes(t);
}

// q4_0: block (d, qs[16]) of row i of its quad <-> quad bytes d at 2 i, qs at 8 + 16 i.
constexpr std::size_t q4_0_d_at(int i) { return 2 * static_cast<std::size_t>(i); }
constexpr std::size_t q4_0_qs_at(int i) { return 8 + 16 * static_cast<std::size_t>(i); }

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
      std::memcpy(quad + q4_0_d_at(i), block, 2);
      std::memcpy(quad + q4_0_qs_at(i), block + 2, 16);
    }
}

void block_panels_row(std::byte* out, const weight& w, int row) {
  const block_layout l = block_layout_of(w.type);
  const int nb = w.cols / l.elements;
  const int i = row % block_panel_quad;
  for (int b = 0; b < nb; ++b) {
    const std::byte* quad = static_cast<const std::byte*>(w.data) + quad_offset(w.type, nb, row, b);
    std::byte* block = out + static_cast<std::size_t>(b) * l.bytes;
    std::memcpy(block, quad + q4_0_d_at(i), 2);
    std::memcpy(block + 2, quad + q4_0_qs_at(i), 16);
  }
}

}  // namespace pagedserve
