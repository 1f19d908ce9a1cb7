#pragma once
// The kernel table a decode benchmark runs and the weight layout it reads, both from the environment,
// so one binary measures another CPU's path (an AVX2 desktop's) A/B on this one:
//   PAGEDSERVE_BENCH_KERNELS=avx2     the steps run that table (default: this CPU's best)
//   PAGEDSERVE_BENCH_ROWS=1           every block matrix in the file's row layout (no panels)
// The loader packs panels for this CPU's best table (block_panels_here); matrices the chosen table
// cannot read as panels (block_panels_pay), or all with PAGEDSERVE_BENCH_ROWS, are gathered back into
// rows on huge pages, as the loader would have kept them on a CPU whose best table is the chosen one.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "model/ggml_block_panels.hpp"
#include "model/ggml_blocks.hpp"
#include "model/mapped_file.hpp"
#include "pagedserve/kernels.hpp"
#include "pagedserve/model.hpp"

namespace pagedserve::bench {

inline const kernels::kernel_table& bench_kernel_table() {
  static const kernels::kernel_table* kt = [] {
    const char* forced = std::getenv("PAGEDSERVE_BENCH_KERNELS");
    const kernels::kernel_table* t = kernels::kernel_table_select(forced ? forced : "auto");
    if (!t) {
      std::fprintf(stderr, "PAGEDSERVE_BENCH_KERNELS=%s: not a table this CPU runs\n", forced);
      std::exit(2);
    }
    return t;
  }();
  return *kt;
}

// m with its panel-packed matrices that bench_kernel_table() should read as rows gathered back into rows.
inline std::shared_ptr<const model> model_for_bench_table(std::shared_ptr<const model> m) {
  const bool rows_only = std::getenv("PAGEDSERVE_BENCH_ROWS") != nullptr;
  const auto as_rows = [&](const weight& w) {
    return w.panel_rows && (rows_only || !kernels::block_panels_pay(bench_kernel_table(), w.type));
  };
  auto out = std::make_shared<model>(*m);
  const auto gather = [&](weight& w) {
    if (!as_rows(w)) return;
    const std::size_t row_bytes = block_row_bytes(w.type, w.cols);
    std::shared_ptr<std::byte> rows = huge_page_buffer(row_bytes * w.rows);
    for (int o = 0; o < w.rows; ++o) block_panels_row(rows.get() + o * row_bytes, w, o);
    w.data = rows.get();
    w.panel_rows = 0;
    out->storage.push_back(std::move(rows));
  };
  const bool tied = out->token_embedding.data == out->classifier.data;
  gather(out->classifier);
  if (tied) out->token_embedding = out->classifier;
  else gather(out->token_embedding);
  for (layer_weights& l : out->layers) {
    for (weight* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) gather(*w);
    l.for_each_expert([&](expert_weights& e) {
      for (weight* w : {&e.gate, &e.up, &e.down}) gather(*w);
    });
  }
  return out;
}

}  // namespace pagedserve::bench
