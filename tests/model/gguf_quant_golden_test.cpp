// llama.cpp's quantized GGUF files (tests/data/golden/gguf: one small Llama as F32, F16, Q8_0, Q4_0,
// Q4_K_M, Q5_K_M and Q6_K) against llama.cpp's own logits, teacher forced over three prompts:
//   - loaded with --quantize f32 (each block dequantized exactly) on the scalar table: llama.cpp's
//     logits over the same exactly dequantized weights, to 1e-3;
//   - loaded packed (the blocks as stored) on the best table: llama.cpp's quantized fast path, to 0.03;
// and the writer's recipes give each tensor the type llama-quantize gave it.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <cstdio>

#include "model/prefill_logits.hpp"
#include "model/block_panels_load.hpp"
#include "model/forward.hpp"
#include "model/ggml_blocks.hpp"
#include "model/gguf_model.hpp"
#include "model/gguf_recipe.hpp"
#include "kv/kv_cache.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

struct golden_file {
  std::string name;  // qtiny-Q4_K_M.gguf
  std::map<std::string, std::string> tensor_types;  // ggml's lower-case type names: "q4_K", "f32"
  std::vector<std::vector<std::vector<float>>> llama_cpp_logits;  // [prompt][position][vocab]
  std::vector<std::vector<std::vector<float>>> dequantized_logits;  // same shape; empty for F32
};

struct golden {
  std::vector<std::vector<token_id>> prompts;
  std::vector<golden_file> files;
};

std::vector<std::vector<std::vector<float>>> logits_of(simdjson::dom::element e) {
  std::vector<std::vector<std::vector<float>>> out;
  for (auto prompt : e.get_array()) {
    auto& p = out.emplace_back();
    for (auto pos : prompt.get_array()) {
      auto& row = p.emplace_back();
      for (auto v : pos.get_array()) row.push_back(static_cast<float>(double(v)));
    }
  }
  return out;
}

const golden& golden_load() {
  static const golden g = [] {
    golden out;
    static simdjson::dom::parser parser;
    simdjson::dom::element root = parser.load((test::data_file("golden/gguf") / "quant_golden.json").string());
    for (auto p : root["prompts"].get_array()) {
      auto& ids = out.prompts.emplace_back();
      for (auto v : p.get_array()) ids.push_back(static_cast<token_id>(int64_t(v)));
    }
    for (auto [key, f] : root["files"].get_object()) {
      golden_file gf;
      gf.name = std::string(key);
      for (auto [tensor, info] : f["tensors"].get_object())
        gf.tensor_types[std::string(tensor)] = std::string(std::string_view(info["type"]));
      gf.llama_cpp_logits = logits_of(f["llama_cpp_logits"]);
      simdjson::dom::element dq;
      if (f["dequantized_f32_logits"].get(dq) == simdjson::SUCCESS) gf.dequantized_logits = logits_of(dq);
      out.files.push_back(std::move(gf));
    }
    return out;
  }();
  return g;
}

// Largest |got - want| over every prompt, position and logit.
double worst_error(const model& m, const kernels::kernel_table& kt, const golden& g,
                   const std::vector<std::vector<std::vector<float>>>& want) {
  double worst = 0;
  for (std::size_t p = 0; p < g.prompts.size(); ++p) {
    const auto got = test::prefill_logits(m, kt, g.prompts[p]);
    const std::size_t vocab = static_cast<std::size_t>(m.config.vocab_size);
    for (std::size_t i = 0; i < want[p].size(); ++i)
      for (std::size_t v = 0; v < vocab; ++v)
        worst = std::max(worst, static_cast<double>(std::abs(got[i * vocab + v] - want[p][i][v])));
  }
  return worst;
}

std::shared_ptr<const model> load(const golden_file& f, weight_format format) {
  auto m = gguf_model_load(test::data_file("golden/gguf") / f.name, {.weights = format});
  EXPECT_TRUE(m.has_value()) << m.error();
  return m ? *m : nullptr;
}

// ggml's type name as the golden file spells it ("q4_K"), of a dtype.
std::string golden_type_name(dtype t) {
  std::string s = gguf_tensor_type_name(*ggml_type_of(t));
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (s.ends_with("_k")) s.back() = 'K';
  return s;
}

TEST(gguf_quant_golden, exactly_dequantized_weights_give_llama_cpps_fp32_logits) {
  PAGEDSERVE_REQUIRE_DATA(test::data_file("golden/gguf"));
  const golden& g = golden_load();
  const kernels::kernel_table& scalar = *kernels::kernel_table_select("scalar");
  for (const golden_file& f : g.files) {
    SCOPED_TRACE(f.name);
    const auto m = load(f, weight_format::f32);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->layers[0].wq.type, dtype::f32);
    const auto& want = f.dequantized_logits.empty() ? f.llama_cpp_logits : f.dequantized_logits;
    const double worst = worst_error(*m, scalar, g, want);
    std::printf("[ %s ] --quantize f32, scalar: max |logit - llama.cpp's over dequantized weights| %.2g\n",
                f.name.c_str(), worst);
    EXPECT_LE(worst, 1e-3);
  }
}

TEST(gguf_quant_golden, packed_blocks_track_llama_cpps_quantized_path) {
  PAGEDSERVE_REQUIRE_DATA(test::data_file("golden/gguf"));
  const kernels::kernel_table& best = *kernels::kernel_table_select();
  if (!best.matmul_blocks) GTEST_SKIP() << "this build's kernel tables have no block matmul";
  const golden& g = golden_load();
  for (const golden_file& f : g.files) {
    SCOPED_TRACE(f.name);
    const auto m = load(f, weight_format::as_stored);
    ASSERT_TRUE(m);
    EXPECT_EQ(golden_type_name(m->layers[0].wq.type), f.tensor_types.at("blk.0.attn_q.weight")) << "kept as stored";
    // Block-quantized matrices replace their mapped bytes with a copy on huge pages: repacked into row
    // panels (ggml_block_panels.hpp) where their type's panel kernel pays here (Q5_K_M's q5_k and the
    // q6_k of every K-quant mix included), else their rows as stored.
    const auto copied = [](const weight& w) { return is_block_quantized(w.type) ? w.n_bytes() : 0; };
    std::uint64_t copy_bytes = copied(m->classifier);
    for (const layer_weights& l : m->layers)
      for (const weight* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
        EXPECT_EQ(w->panel_rows != 0, block_panels_here(w->type)) << dtype_name(w->type);
        copy_bytes += copied(*w);
      }
    EXPECT_LT((m->owned_bytes - copy_bytes) * 100, model_weight_bytes(*m))
        << "only the fp32 norms and the block-quantized matrices are copies; the other matrices are views";
    const double worst = worst_error(*m, best, g, f.llama_cpp_logits);
    std::printf("[ %s ] packed, %s: max |logit - llama.cpp's quantized path| %.3g\n", f.name.c_str(),
                std::string(kernels::isa_name(best.which)).c_str(), worst);
    EXPECT_LE(worst, 0.03);
  }
}

// Every tensor of every file: the type the loaded model holds it in (packed) is the file's, and the
// writer's recipe of the file's name picks that same type (llama-quantize's choice, tensor by tensor).
TEST(gguf_quant_golden, recipes_pick_llama_quantizes_types) {
  PAGEDSERVE_REQUIRE_DATA(test::data_file("golden/gguf"));
  for (const golden_file& f : golden_load().files) {
    SCOPED_TRACE(f.name);
    const std::string ftype = f.name.substr(6, f.name.size() - 6 - 5);  // qtiny-<ftype>.gguf
    const std::optional<gguf_recipe> recipe = gguf_recipe_parse(ftype);
    ASSERT_TRUE(recipe) << ftype;
    auto file = gguf_file::open(test::data_file("golden/gguf") / f.name);
    ASSERT_TRUE(file.has_value()) << file.error();
    const gguf_recipe_model shape{4, 2, file->tensor("output.weight") == nullptr};
    int n_checked = 0;
    for (const gguf_tensor_info& t : file->tensors()) {
      const dtype picked = gguf_recipe_type(*recipe, shape, t.name, t.ne);
      EXPECT_EQ(golden_type_name(picked), f.tensor_types.at(t.name)) << t.name;
      ++n_checked;
    }
    EXPECT_EQ(n_checked, 3 + 4 * 9);
  }
}

}  // namespace
}  // namespace pagedserve
