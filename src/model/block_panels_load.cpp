// model_pack_block_panels: the matrices the forward pass multiplies, each repacked once at load.
#include "model/block_panels_load.hpp"

#include <spdlog/spdlog.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "model/ggml_block_panels.hpp"
#include "model/ggml_blocks.hpp"
#include "model/mapped_file.hpp"
#include "pagedserve/kernels.hpp"
#include "pagedserve/model.hpp"

namespace pagedserve {

bool block_panels_here(dtype t) {
  const kernels::kernel_table* kt = kernels::kernel_table_select();
  return kt && block_panels_defined(t) && kernels::block_panels_pay(*kt, t);
}

namespace {

// n zeroed bytes on huge pages, owned (and counted) by m.
std::byte* model_huge_page_bytes(model& m, std::size_t n) {
  std::shared_ptr<std::byte> buffer = huge_page_buffer(n);
  m.owned_bytes += n;
  m.storage.push_back(buffer);
  return buffer.get();
}

}  // namespace

std::byte* model_keep_on_huge_pages(model& m, std::span<const std::byte> bytes) {
  std::byte* kept = model_huge_page_bytes(m, bytes.size());
  if (!bytes.empty()) std::memcpy(kept, bytes.data(), bytes.size());
  return kept;
}

weight block_panels_kept(model& m, const weight& w) {
  std::byte* panels = model_huge_page_bytes(m, block_panels_bytes(w.type, w.rows, w.cols));
  block_panels_pack(panels, static_cast<const std::byte*>(w.data), w.type, w.rows, w.cols);
  weight out = w;
  out.data = panels;
  out.panel_rows = block_panel_rows;
  return out;
}

void model_pack_block_panels(model& m, std::span<const std::span<const std::byte>> mapped) {
  const bool tied = m.classifier == m.token_embedding;
  std::vector<weight*> matrices{&m.classifier};
  for (layer_weights& l : m.layers) {
    for (weight* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) matrices.push_back(w);
    l.for_each_expert([&](expert_weights& e) {
      for (weight* w : {&e.gate, &e.up, &e.down}) matrices.push_back(w);
    });
  }
  const auto in_file = [&](const weight* w) {
    const auto* p = static_cast<const std::byte*>(w->data);
    return std::any_of(mapped.begin(), mapped.end(), [&](std::span<const std::byte> file) {
      return p >= file.data() && p + w->n_bytes() <= file.data() + file.size();
    });
  };
  // Block-quantized matrices: into panels where they pay, else their rows as stored (when they are
  // the file's bytes), so every matrix a step streams is on huge pages.
  std::erase_if(matrices, [&](const weight* w) {
    return w->empty() || w->panel_rows || !is_block_quantized(w->type) || (!block_panels_here(w->type) && !in_file(w));
  });
  if (matrices.empty()) return;
  // One buffer on huge pages for all of them (mapped_file.hpp: huge_page_buffer), each matrix from a
  // cache line's start.
  constexpr std::size_t line = 64;
  const auto copy_bytes = [](const weight* w) {
    return block_panels_here(w->type) ? block_panels_bytes(w->type, w->rows, w->cols) : w->n_bytes();
  };
  std::size_t total = 0;
  for (const weight* w : matrices) total += (copy_bytes(w) + line - 1) / line * line;
  std::shared_ptr<std::byte> buffer = huge_page_buffer(total);
  std::vector<std::byte*> places;  // each matrix's start in the buffer
  std::byte* next = buffer.get();
  int n_packed = 0;
  std::size_t bytes = 0, packed_bytes = 0;
  for (const weight* w : matrices) {
    const std::size_t n = copy_bytes(w);
    places.push_back(next);
    bytes += n;
    if (block_panels_here(w->type)) ++n_packed, packed_bytes += n;
    next += (n + line - 1) / line * line;
  }
  // Matrices on every core: most of a load's time here is the kernel zeroing the fresh huge pages
  // their first touch faults in, which then runs on every core too.
  tbb::parallel_for(std::size_t{0}, matrices.size(), [&](std::size_t i) {
    weight* w = matrices[i];
    const std::span<const std::byte> stored(static_cast<const std::byte*>(w->data), w->n_bytes());
    if (block_panels_here(w->type)) {
      block_panels_pack(places[i], stored.data(), w->type, w->rows, w->cols);
      w->panel_rows = block_panel_rows;
    } else {
      std::memcpy(places[i], stored.data(), stored.size());
    }
    if (in_file(w)) release_pages(stored);
    w->data = places[i];
  });
  if (tied) m.token_embedding = m.classifier;  // its lookups gather rows from the copy (panels or rows)
  m.owned_bytes += bytes;
  m.storage.push_back(std::move(buffer));
  spdlog::info("repacked {} matrices ({} MiB) into row panels, {} ({} MiB) copied as rows, all on huge pages",
               n_packed, packed_bytes >> 20, matrices.size() - n_packed, (bytes - packed_bytes) >> 20);
}

}  // namespace pagedserve
