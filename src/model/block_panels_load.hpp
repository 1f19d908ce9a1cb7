#pragma once
// The load step that repacks block-quantized matrices into row panels (model/ggml_block_panels.hpp).
#include <cstddef>
#include <span>

#include "pagedserve/model.hpp"

namespace pagedserve {

// Repacks every matrix of m whose format has a panel kernel in this CPU's best kernel table that pays
// (block_panels_here) into a buffer of m's own on huge pages, copies the other block-quantized
// matrices of the file there as stored rows, and releases their pages of the file mappings
// `mapped` (one span per file: a split model's files are mapped apart) one matrix after the other, so the file's bytes and the copy are never both resident for
// long. A classifier tied to the token embedding is repacked too (it streams at every step, the
// embedding's lookups gather their rows back from the panels: weight_row_to_f32), and the embedding
// then views the same panels. Other tables, when forced, still compute panel-packed matrices (on
// their own panel kernels where kernels::block_panels_pay, else gathering rows back), only slower.
void model_pack_block_panels(model& m, std::span<const std::span<const std::byte>> mapped);

// Whether matrices of type t are repacked into row panels on this CPU (its best table has a panel
// kernel for t, and it beats the row kernels): what model_pack_block_panels and --quantize int4
// (model_convert_weights) decide by.
bool block_panels_here(dtype t);

// The panels of w (a block-quantized matrix, rows as stored) in a buffer of m's own, on huge pages.
weight block_panels_kept(model& m, const weight& w);

// A copy of `bytes` kept by m in a buffer on huge pages (mapped_file.hpp: huge_page_buffer): for the
// matrices a decode step streams, whose reads would otherwise cross a 4 KiB page every few hundred ns.
std::byte* model_keep_on_huge_pages(model& m, std::span<const std::byte> bytes);

}  // namespace pagedserve
