#pragma once
// Block-quantized matrices repacked once at load into row panels, so one activation load and one
// vpdpbusd feed 4 rows at once (docs/block-kernels.md draws the layout). Same bits per weight as the
// file: the blocks' fields are only moved, never re-encoded, and the repacked copy replaces the file's
// tensor. A panel holds block_panel_rows rows (rows past the end are zero blocks); inside it, block b
// of its 4 quads (4 rows each) in turn, then block b + 1, so a panel streams as one sequential run.
//
// q4_0's quad block (72 bytes): the 4 rows' fp16 scales d (8 bytes), then their 16 bytes of nibbles,
// row after row: one zmm of nibbles, each 128-bit lane one row's block. q8_0's (136 bytes): the 4 d,
// the 4 rows' weights 0..15, then their weights 16..31. q4_k's (576 bytes): the 4 rows'
// d, then dmin (8 bytes each); their 12 packed scale bytes as three runs of 4 bytes per row (48 bytes);
// then for each 32 bytes of nibbles (sub-blocks 2c, 2c + 1), the first 16 of every row, then the last 16.
// q5_k's (704 bytes): q4_k's 576, then the rows' qh, its first 16 bytes of every row, then the last 16.
// q6_k's (840 bytes): each 16 bytes of the block's first 208 (ql, qh, scales) of the 4 rows, one 64-byte
// run per 16 bytes (row i's at 16 i), then the 4 d.
#include <cstddef>

#include "pagedserve/weight.hpp"

namespace pagedserve {

constexpr int block_panel_rows = 16;  // rows per panel: ops.cpp's rows_per_tile, so a tile is a panel
constexpr int block_panel_quad = 4;   // rows interleaved in one quad block

// Whether a panel of t holds its quads one after the other (each quad's blocks in order: the K-quants,
// whose kernels run one quad at a time) rather than block b of every quad, then block b + 1 (q4_0).
constexpr bool block_panel_quads_follow(dtype t) { return t == dtype::q4_k || t == dtype::q5_k || t == dtype::q6_k; }

// Whether type t has a panel layout (q4_0, q8_0, q4_k, q5_k, q6_k).
constexpr bool block_panels_defined(dtype t) {
  return t == dtype::q4_0 || t == dtype::q8_0 || t == dtype::q4_k || t == dtype::q5_k || t == dtype::q6_k;
}
constexpr int block_panel_padded_rows(int rows) { return (rows + block_panel_rows - 1) / block_panel_rows * block_panel_rows; }

// Bytes of the panels of a [rows, cols] matrix of type t (its padded rows' blocks).
std::size_t block_panels_bytes(dtype t, int rows, int cols);

// out[block_panels_bytes] = the panels of the [rows, cols] matrix stored row after row in `stored`.
void block_panels_pack(std::byte* out, const std::byte* stored, dtype t, int rows, int cols);

// out[block_row_bytes(w.type, w.cols)] = row `row` of the panel-packed w, in the file's block layout.
void block_panels_row(std::byte* out, const weight& w, int row);

}  // namespace pagedserve
