// --quantize int4: matrices re-stored at load as 4-bit ggml blocks. The candidates (q4_0: 32 weights,
// one fp16 scale; q4_1: plus a zero point; q4_K: 256-weight super-blocks of 6-bit scales and mins per
// 32) are measured here on the golden GGUF Llama (dim 256, hidden 768: every row whole blocks of each)
// against its fp32 self, and the chosen one (model_int4_type) must stay within a bound of fp32; a model
// whose rows are not whole blocks falls back to int8.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "model/prefill_logits.hpp"
#include "model/block_panels_load.hpp"
#include "model/ggml_block_panels.hpp"
#include "model/forward.hpp"
#include "model/ggml_blocks.hpp"
#include "model/gguf_model.hpp"
#include "kv/kv_cache.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

const std::vector<token_id> prompt = {1, 310, 2, 45, 77, 500, 13, 13, 260, 31, 99, 400, 7, 150, 250, 3,
                                      88, 1, 301, 42, 17, 222, 190, 5, 64, 128, 256, 300, 311, 12, 470, 9};

// w re-stored as type t row by row (what model_convert_weights does for int4's type).
weight quantized(model& m, const weight& w, dtype t) {
  const std::size_t row_bytes = block_row_bytes(t, w.cols);
  std::byte* dst = m.keep(std::vector<std::byte>(static_cast<std::size_t>(w.rows) * row_bytes));
  std::vector<float> row(static_cast<std::size_t>(w.cols));
  for (int r = 0; r < w.rows; ++r) {
    weight_row_to_f32(row.data(), w, r);
    std::memcpy(dst + r * row_bytes, quantize_blocks(t, row).data(), row_bytes);
  }
  return weight{dst, t, w.rows, w.cols};
}

// fp32's matrices re-stored as t, rows as stored, or (`panels`) every one but the token embedding then
// repacked into row panels as the loader does where this CPU has a panel kernel for t.
std::shared_ptr<model> all_matrices_as(const model& fp32, dtype t, bool panels = false) {
  auto m = std::make_shared<model>(fp32);
  const bool tied = m->classifier == m->token_embedding;
  const auto restore = [&](const weight& w) {
    const weight q = quantized(*m, w, t);
    return panels && block_panels_here(t) ? block_panels_kept(*m, q) : q;
  };
  m->token_embedding = quantized(*m, m->token_embedding, t);
  m->classifier = tied ? m->token_embedding : restore(m->classifier);
  for (layer_weights& l : m->layers)
    for (weight* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) *w = restore(*w);
  return m;
}

struct logit_error {
  double max_abs = 0, rms = 0;
};

logit_error compare(const std::vector<float>& got, const std::vector<float>& want) {
  logit_error e;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    e.max_abs = std::max(e.max_abs, std::abs(d));
    e.rms += d * d;
  }
  e.rms = std::sqrt(e.rms / static_cast<double>(want.size()));
  return e;
}

std::shared_ptr<const model> golden_fp32() {
  auto m = gguf_model_load(test::data_file("golden/gguf") / "qtiny-F32.gguf");
  EXPECT_TRUE(m.has_value()) << m.error();
  return m ? *m : nullptr;
}

TEST(int4_quantize, candidates_measured_and_the_chosen_one_stays_close_to_fp32) {
  PAGEDSERVE_REQUIRE_DATA(test::data_file("golden/gguf"));
  const auto fp32 = golden_fp32();
  ASSERT_TRUE(fp32);
  const kernels::kernel_table& kt = *kernels::kernel_table_select();
  const auto want = test::prefill_logits(*fp32, kt, prompt);
  double logit_rms = 0;
  for (const float v : want) logit_rms += static_cast<double>(v) * v;
  logit_rms = std::sqrt(logit_rms / want.size());
  // Measured (32 positions x 512 logits of rms 0.33, random N(0, 0.02) weights: a hard case, no
  // structure to spare): rms error q4_0 0.076 (4.5 bits/weight), q4_1 0.063 (5.0), q4_K 0.062 (4.5).
  std::map<dtype, double> rms_error;
  for (const dtype t : {dtype::q4_0, dtype::q4_1, dtype::q4_k}) {
    const auto m = all_matrices_as(*fp32, t);
    const logit_error e = compare(test::prefill_logits(*m, kt, prompt), want);
    rms_error[t] = e.rms;
    const block_layout l = block_layout_of(t);
    std::printf("[ int4 candidate %s ] %.2f bits/weight: logits max |err| %.4f, rms err %.4f (logit rms %.3f)\n",
                std::string(dtype_name(t)).c_str(), 8.0 * l.bytes / l.elements, e.max_abs, e.rms, logit_rms);
    EXPECT_LT(e.max_abs, 2 * logit_rms);
  }
  EXPECT_LT(rms_error[dtype::q4_k], rms_error[dtype::q4_0]) << "q4_K: less error than q4_0 at the same bytes";
  auto int4 = std::make_shared<model>(*fp32);
  model_convert_weights(*int4, weight_format::int4);
  EXPECT_EQ(int4->layers[0].wq.type, model_int4_type);
  EXPECT_EQ(int4->token_embedding.type, model_int4_type);
  const auto got = test::prefill_logits(*int4, kt, prompt);
  EXPECT_EQ(got, test::prefill_logits(*all_matrices_as(*fp32, model_int4_type, true), kt, prompt))
      << "the chosen candidate, bit for bit";
  const logit_error e = compare(got, want);
  EXPECT_LT(e.rms, 0.3 * logit_rms);
  EXPECT_LT(e.max_abs, logit_rms);
}

// int4's matrices go into row panels (model/ggml_block_panels.hpp) where this CPU has a panel kernel
// for its type, as a GGUF file's blocks do: every matrix but the token embedding (row lookups). The
// panels hold the very blocks of the rows layout: a table without a panel kernel (it gathers the rows
// back) gives the rows layout's logits bit for bit, and the best table's panel kernel the same logits
// up to fp32 summation order.
TEST(int4_quantize, matrices_are_row_panels_with_the_rows_layouts_logits) {
  PAGEDSERVE_REQUIRE_DATA(test::data_file("golden/gguf"));
  if (!block_panels_here(model_int4_type)) GTEST_SKIP() << "no panel kernel for int4's blocks on this CPU";
  const auto fp32 = golden_fp32();
  ASSERT_TRUE(fp32);
  auto int4 = std::make_shared<model>(*fp32);
  model_convert_weights(*int4, weight_format::int4);
  EXPECT_EQ(int4->token_embedding.panel_rows, 0);
  if (int4->classifier != int4->token_embedding) {
    EXPECT_EQ(int4->classifier.panel_rows, block_panel_rows);
  }
  for (const layer_weights& l : int4->layers)
    for (const weight* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      EXPECT_EQ(w->type, model_int4_type);
      EXPECT_EQ(w->panel_rows, block_panel_rows);
    }
  const auto rows = all_matrices_as(*fp32, model_int4_type);
  const kernels::kernel_table& gather = *kernels::kernel_table_select("avx512");
  EXPECT_FALSE(kernels::block_panels_pay(gather, model_int4_type));
  EXPECT_EQ(test::prefill_logits(*int4, gather, prompt), test::prefill_logits(*rows, gather, prompt))
      << "panels gathered back: the rows layout's bits";
  const kernels::kernel_table& best = *kernels::kernel_table_select();
  const auto want = test::prefill_logits(*rows, best, prompt);
  const logit_error e = compare(test::prefill_logits(*int4, best, prompt), want);
  double logit_max = 0;
  for (const float v : want) logit_max = std::max(logit_max, static_cast<double>(std::abs(v)));
  std::printf("[ int4 panels ] logits vs the rows layout's: max |diff| %.3g (max |logit| %.3g)\n", e.max_abs, logit_max);
  // The same integers summed in another fp32 order, through 4 layers whose activations are requantized:
  // the bound gguf_quant_golden gives llama.cpp's own quantized path (measured 0.018 of max |logit| 1.5).
  EXPECT_LT(e.max_abs, 0.03);
}

TEST(int4_quantize, rows_that_are_not_whole_blocks_fall_back_to_int8) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  auto m = llama2c_model_load(test::model_file("stories260K.bin"));  // dim 64, hidden 172
  ASSERT_TRUE(m.has_value()) << m.error();
  auto int4 = std::make_shared<model>(**m);
  model_convert_weights(*int4, weight_format::int4);
  EXPECT_EQ(int4->layers[0].wq.type, dtype::i8);
  EXPECT_EQ(int4->layers[0].w_down.type, dtype::i8);
  EXPECT_EQ(weight_format_parse("int4"), weight_format::int4);
}

}  // namespace
}  // namespace pagedserve
