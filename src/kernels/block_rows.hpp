#pragma once
// One row of a block-quantized weight in the file's layout, for the kernels that read rows: in place,
// or gathered from the panels it was repacked into (model/ggml_block_panels.hpp) when the running
// table has no panel kernel for the format (a forced table, or tests). The gather only moves bytes,
// so such a table computes exactly what it computes over the file's rows.
#include <cstddef>
#include <vector>

#include "model/ggml_block_panels.hpp"
#include "model/ggml_blocks.hpp"

namespace pagedserve::kernels {

inline const std::byte* block_row_of(const weight& w, int o) {
  const std::size_t row_bytes = block_row_bytes(w.type, w.cols);
  if (w.panel_rows == 0) return static_cast<const std::byte*>(w.data) + static_cast<std::size_t>(o) * row_bytes;
  thread_local std::vector<std::byte> gathered;  // grows to the widest row once per thread
  if (gathered.size() < row_bytes) gathered.resize(row_bytes);
  block_panels_row(gathered.data(), w, o);
  return gathered.data();
}

}  // namespace pagedserve::kernels
