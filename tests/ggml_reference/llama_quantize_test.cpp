// gguf_recipe against llama-quantize itself: llama.cpp's llama_model_quantize (its prebuilt libllama,
// opened with dlopen beside ggml's libraries) quantizes F32 files this writer made, under every ftype
// it takes without an importance matrix, and every tensor of its output has the type gguf_recipe
// picks for that ftype. A llama (GQA 4, 16 layers), a qwen3 (GQA 2: the rules that need GQA >= 4 do
// not fire) and a qwen3moe (8 experts: the 8-expert bumps; tied embeddings). Which llama.cpp this is:
// the package's _nlcBuildMetadata.json (node-llama-cpp 3.22.1, llama.cpp release v0.5.0 of its fork).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "model/ggml_blocks.hpp"
#include "model/gguf.hpp"
#include "model/gguf_random_model.hpp"
#include "llama_library.hpp"

namespace pagedserve {
namespace {

// The smallest widths that tile 256-weight blocks. The llama takes every ftype (16 layers: the first
// 16th, eighth and use_more_bits all fire); the others, to stay fast (llama.cpp's IQ4 and k-quant
// searches take most of the time), the ftypes whose rules their shape changes.
struct case_shape {
  model_config config;
  std::vector<std::string> ftypes;  // empty: all
};

case_shape shape_of(const std::string& architecture) {
  case_shape s;
  model_config& c = s.config;
  c.architecture = architecture;
  c.dim = 256, c.hidden_dim = 256, c.n_layers = 16, c.n_heads = 4, c.n_kv_heads = 1, c.head_dim = 64;
  c.vocab_size = 256, c.seq_len = 64, c.shared_classifier = false;
  if (architecture == "qwen3") {  // GQA 2: attn_v keeps the Q2_K/IQ4 defaults
    c.n_layers = 8, c.n_kv_heads = 2;
    s.ftypes = {"Q2_K", "Q3_K_M", "Q4_K_S", "IQ4_NL"};
  }
  if (architecture == "qwen3moe") {  // 8 experts, tied
    c.n_layers = 2, c.shared_classifier = true;
    c.n_experts = 8, c.n_experts_used = 2, c.expert_hidden_dim = 256, c.norm_topk_prob = true;
    s.ftypes = {"Q2_K", "Q3_K_M", "Q3_K_L", "Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_XS"};
  }
  return s;
}

class llama_quantize : public testing::TestWithParam<std::string> {};

TEST_P(llama_quantize, gives_every_tensor_the_recipes_type) {
  const test::llama_library llama;
  if (!llama.ok()) GTEST_SKIP() << llama.why();
  const case_shape shape = shape_of(GetParam());
  const model_config& c = shape.config;
  const auto f32_path = test::temp_file(c.architecture + "_f32_for_llama_quantize.gguf");
  gguf_writer w;
  gguf_add_random_model(w, c, *gguf_recipe_parse("F32"), 5);
  ASSERT_TRUE(w.write(f32_path).has_value());
  for (const auto& [ftype, number] : test::llama_ftypes) {
    if (!shape.ftypes.empty() && std::find(shape.ftypes.begin(), shape.ftypes.end(), ftype) == shape.ftypes.end())
      continue;
    SCOPED_TRACE(ftype);
    const auto out = test::temp_file(c.architecture + "_llama_quantize_" + ftype + ".gguf");
    ASSERT_TRUE(llama.quantize(f32_path, out, number));
    auto file = gguf_file::open(out);
    ASSERT_TRUE(file.has_value()) << file.error();
    const gguf_recipe recipe = *gguf_recipe_parse(ftype);
    const gguf_recipe_model m = gguf_recipe_model_of(c);
    int n_checked = 0;
    for (const gguf_tensor_info& t : file->tensors()) {
      const dtype ours = gguf_recipe_type(recipe, m, t.name, t.ne);
      EXPECT_EQ(gguf_tensor_type_name(t.type), gguf_tensor_type_name(*ggml_type_of(ours))) << t.name;
      ++n_checked;
    }
    EXPECT_GT(n_checked, 3 * c.n_layers);
    std::filesystem::remove(out);
  }
  std::filesystem::remove(f32_path);
}

INSTANTIATE_TEST_SUITE_P(all, llama_quantize, testing::Values("llama", "qwen3", "qwen3moe"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace pagedserve
