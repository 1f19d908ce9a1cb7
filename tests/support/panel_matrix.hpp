#pragma once
// A matrix of stored ggml blocks repacked into row panels, as the loader keeps it (model/ggml_block_panels.hpp).
#include <cstddef>
#include <vector>

#include "model/ggml_block_panels.hpp"
#include "pagedserve/weight.hpp"

namespace pagedserve::test {

struct panel_matrix {
  std::vector<std::byte> bytes;
  weight w;  // views bytes (moving the matrix keeps the view valid)
};

inline panel_matrix pack_panels(dtype t, const std::byte* stored, int rows, int cols) {
  panel_matrix m{std::vector<std::byte>(block_panels_bytes(t, rows, cols)), {}};
  block_panels_pack(m.bytes.data(), stored, t, rows, cols);
  m.w = weight{m.bytes.data(), t, rows, cols};
  m.w.panel_rows = block_panel_rows;
  return m;
}

}  // namespace pagedserve::test
