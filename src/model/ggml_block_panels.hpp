#pragma once
// Block-quantized matrices repacked once at load into row panels, so one activation load and one
// vpdpbusd feed 16 rows at once (docs/block-kernels.md draws the layout). Same bits per weight as the
// file: the blocks' fields are moved (q5_0 / q5_1's qh has its 32 bits permuted; q3_k's qs and hmask are
// re-encoded as 3-bit values in the same 96 bytes a row), and the repacked copy replaces the file's tensor. A panel holds block_panel_rows rows (rows past the end are zero blocks).
//
// Block b of the panel's 16 rows, then block b + 1, so a panel streams as one sequential run; inside
// a panel block every field is laid out 16 rows wide, 4 bytes of each row per 64 bytes (one row per
// 32-bit element of a zmm), so one instruction works on the 16 rows. q4_0's panel block (288 bytes):
// the 16 rows' fp16 scales d (32 bytes), then 4 runs of 64 bytes, run k holding bytes 4k..4k+3 of every
// row's nibbles. q8_0's (544 bytes): the 16 d, then 8 runs, run k holding weights 4k..4k+3 of every row.
// q4_k's (2304 bytes): the 16 d, the 16 dmin, 3 runs of the 12 packed scale bytes (4 a row), then 32
// runs of the 128 bytes of nibbles. iq4_nl's is q4_0's; q4_1, q5_0, q5_1 put m (q4_1, q5_1: 16 fp16 at
// 32) and qh (q5_0: at 32, q5_1: at 64; 4 bytes a row, its bits transposed so that byte k's bit u is
// weight 4u + k's) between the d and the nibbles; iq4_xs's (2176 bytes): the 16 d, scales_h (2 bytes a
// row), scales_l (4 a row), then q4_k's 32 runs of nibbles. q2_k's (1344 bytes): d, dmin, 4 runs of the
// 16 scale bytes, 16 runs of qs; q3_k's (1760 bytes): d, 3 runs of the 12 scale bytes, then 8 triples of
// runs holding the weights as 3-bit values (ggml_block_panels.cpp); q6_k's (3360 bytes): 4 steps, each 4 x (2 runs of ql, 1 of qh) then 4 groups' scales
// (16 bytes, a byte a row), in the order its kernel reads them, then the 16 d. q5_k's (2816 bytes):
// q4_k's with 8 runs of qh (4 bytes a row) between the scales and the nibbles.
#include <cstddef>

#include "pagedserve/weight.hpp"

namespace pagedserve {

constexpr int block_panel_rows = 16;  // rows per panel: ops.cpp's rows_per_tile, so a tile is a panel

// Whether type t has a panel layout (the 32-weight formats q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl; the
// 256-weight q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs).
constexpr bool block_panels_defined(dtype t) {
  switch (t) {
    case dtype::q4_0:
    case dtype::q4_1:
    case dtype::q5_0:
    case dtype::q5_1:
    case dtype::q8_0:
    case dtype::iq4_nl:
    case dtype::q2_k:
    case dtype::q3_k:
    case dtype::q4_k:
    case dtype::q5_k:
    case dtype::q6_k:
    case dtype::iq4_xs: return true;
    default: return false;
  }
}
constexpr int block_panel_padded_rows(int rows) { return (rows + block_panel_rows - 1) / block_panel_rows * block_panel_rows; }

// Bytes of the panels of a [rows, cols] matrix of type t (its padded rows' blocks).
std::size_t block_panels_bytes(dtype t, int rows, int cols);

// out[block_panels_bytes] = the panels of the [rows, cols] matrix stored row after row in `stored`.
void block_panels_pack(std::byte* out, const std::byte* stored, dtype t, int rows, int cols);

// out[block_row_bytes(w.type, w.cols)] = row `row` of the panel-packed w, in the file's block layout.
void block_panels_row(std::byte* out, const weight& w, int row);

}  // namespace pagedserve
