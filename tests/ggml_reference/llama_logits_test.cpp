// pagedserve's logits against llama.cpp's own (libllama, tests/ggml_reference/llama_library.hpp) on
// every ftype llama-quantize writes, the way quant_golden.json checks seven of them: the golden model
// (qtiny-F32.gguf, written by llama.cpp) quantized by llama_model_quantize itself, then teacher forced
// over the golden's three prompts and three others by llama.cpp and by pagedserve:
//   - loaded packed (the blocks as stored) on the best kernel table: llama.cpp's quantized path, to 0.03;
//   - loaded with --quantize f32 (each block dequantized exactly) on the scalar table: llama.cpp's
//     logits over the same file requantized to F32 (`llama-quantize --allow-requantize ... F32`, ggml's
//     dequantization), to 1e-3.
// One test per ftype, so CTest runs them side by side.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "llama_library.hpp"
#include "model/gguf_model.hpp"
#include "model/gguf_random_model.hpp"
#include "model/gpt2_test_model.hpp"
#include "model/gguf_split.hpp"
#include "model/gguf_recipe.hpp"
#include "model/gguf_writer.hpp"
#include "model/prefill_logits.hpp"
#include "pagedserve/kernels.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

// quant_golden.json's three prompts (lengths 8, 24, 64), then three more of those lengths: BOS and ids
// spread over the golden model's 512-token vocabulary past its special tokens.
std::vector<std::vector<std::int32_t>> prompts(const std::filesystem::path& golden_json) {
  std::vector<std::vector<std::int32_t>> out;
  simdjson::dom::parser parser;
  for (auto p : parser.load(golden_json.string())["prompts"].get_array()) {
    auto& ids = out.emplace_back();
    for (auto v : p.get_array()) ids.push_back(static_cast<std::int32_t>(int64_t(v)));
  }
  for (const int n : {8, 24, 64}) {
    auto& ids = out.emplace_back(1, 1);
    for (int i = 1; i < n; ++i) ids.push_back(3 + (i * 7919 + n * 104729) % 509);
  }
  return out;
}

// Largest |ours - llama.cpp's| over every prompt, position and logit.
double worst_error(const model& m, const kernels::kernel_table& kt, const std::vector<std::vector<std::int32_t>>& ids,
                   const std::vector<std::vector<float>>& want) {
  double worst = 0;
  for (std::size_t p = 0; p < ids.size(); ++p) {
    const std::vector<token_id> tokens(ids[p].begin(), ids[p].end());
    const std::vector<float> got = test::prefill_logits(m, kt, tokens);
    EXPECT_EQ(got.size(), want[p].size());
    for (std::size_t i = 0; i < std::min(got.size(), want[p].size()); ++i)
      worst = std::max(worst, static_cast<double>(std::abs(got[i] - want[p][i])));
  }
  return worst;
}

class llama_cpp_logits : public testing::TestWithParam<std::pair<const char*, int>> {};

TEST_P(llama_cpp_logits, match_on_the_golden_model) {
  const auto [ftype, number] = GetParam();
  const test::llama_library llama;
  if (!llama.ok()) GTEST_SKIP() << llama.why();
  const auto source = test::data_file("golden/gguf");
  PAGEDSERVE_REQUIRE_DATA(source);
  const auto quantized = test::temp_file(std::string("qtiny-") + ftype + ".gguf");
  const auto requantized = test::temp_file(std::string("qtiny-") + ftype + "-as-F32.gguf");
  ASSERT_TRUE(llama.quantize(source / "qtiny-F32.gguf", quantized, number));
  ASSERT_TRUE(llama.quantize(quantized, requantized, test::llama_ftype_all_f32, true));
  const auto ids = prompts(source / "quant_golden.json");
  const auto fast = llama.logits(quantized, ids);
  const auto exact = llama.logits(requantized, ids);
  ASSERT_FALSE(fast.empty()) << "llama.cpp could not evaluate " << quantized;
  ASSERT_FALSE(exact.empty()) << "llama.cpp could not evaluate " << requantized;

  const kernels::kernel_table& best = *kernels::kernel_table_select();
  auto packed = gguf_model_load(quantized, {.weights = weight_format::as_stored});
  ASSERT_TRUE(packed.has_value()) << packed.error();
  const double packed_error = worst_error(**packed, best, ids, fast);
  auto dequantized = gguf_model_load(quantized, {.weights = weight_format::f32});
  ASSERT_TRUE(dequantized.has_value()) << dequantized.error();
  const double exact_error = worst_error(**dequantized, *kernels::kernel_table_select("scalar"), ids, exact);
  std::printf("[ %s ] max |logit - llama.cpp's|: packed on %s %.3g (quantized path), f32 on scalar %.2g (F32)\n",
              ftype, std::string(kernels::isa_name(best.which)).c_str(), packed_error, exact_error);
  EXPECT_LE(packed_error, 0.03);
  EXPECT_LE(exact_error, 1e-3);
  std::filesystem::remove(quantized);
  std::filesystem::remove(requantized);
}

INSTANTIATE_TEST_SUITE_P(all, llama_cpp_logits, testing::ValuesIn(test::llama_ftypes),
                         [](const testing::TestParamInfo<std::pair<const char*, int>>& info) {
                           return std::string(info.param.first);
                         });

// The architectures the GGUF loader runs besides llama2.c-converted llamas, as gguf_add_random_model writes
// them (N(0, 0.02) matrices, unit norms, a synthetic vocabulary llama.cpp loads): llama (GQA 4; with
// heads wider than dim / heads, as Mistral-Nemo's; with Llama 3.1's rope_freqs; with linear RoPE scaling; with
// Mixtral's experts, all used on the quantized files as qwen3moe's below, top-2 on F32), qwen2, qwen2moe (a
// shared expert beside the routed ones; all used, and top-2 on F32)
// (q/k/v biases), qwen3 (head_dim 64 apart from dim / heads, q/k norms, GQA 2; also with YaRN), qwen3moe (8 experts, tied classifier). Logits
// against llama.cpp's on the F32 file (exact path, 1e-3) and on the files llama-quantize makes of it
// as Q8_0 and Q4_K_M (packed, 0.03). The MoE model's quantized files use all 8 experts (weights from a
// softmax over every expert): with 2 of 8 a random router's second and third choices are often within
// the quantized path's rounding of each other, so llama.cpp and pagedserve, each right, pick different
// experts. Its top-2 choice is checked on the F32 file (qwen3moe_top2), where both compute the same router.
// And gpt2 (LayerNorm, GELU, learned positions, fused q/k/v with biases) as convert_hf_to_gguf.py writes it
// (gpt2_test_model.hpp).
struct architecture_case {
  model_config config;
  bool quantized = true;  // also compare llama-quantize's Q8_0 and Q4_K_M files
};

// GPT-2 as the gpt2 tests shape it, wide enough for 256-weight K-quant blocks.
test::gpt2_spec gpt2_spec_of(const model_config& c) {
  test::gpt2_spec s;
  s.name = "gpt2_llama_cpp";
  s.dim = c.dim, s.layers = c.n_layers, s.heads = c.n_heads, s.vocab = c.vocab_size, s.positions = c.seq_len;
  return s;
}

void write_f32_model(const std::string& name, const model_config& c, const std::filesystem::path& path) {
  gguf_writer w;
  if (name == "gpt2") {
    const test::gpt2_spec s = gpt2_spec_of(c);
    auto tensors = test::gpt2_random_tensors(s, dtype::f32, 19);
    // The tied classifier scaled to the other models' logits (std ~0.3, not ~9), so the same absolute
    // bounds mean the same relative agreement.
    for (float& v : tensors.at("wte.weight").values) v *= 0.04f;
    test::gguf_add_gpt2(w, s, tensors, gguf_tensor_type::f32);
  } else {
    gguf_add_random_model(w, c, *gguf_recipe_parse("F32"), 19);
  }
  if (name == "llama_rope_freqs") {  // Llama 3.1's scaling as the converter precomputes it: one divisor a frequency
    std::vector<float> factors(c.head_size() / 2);
    for (std::size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 7.0f * static_cast<float>(i) / factors.size();
    w.add_tensor("rope_freqs.weight", {factors.size()}, dtype::f32, factors);
  }
  if (name == "llama_linear_rope") {
    w.add_string("llama.rope.scaling.type", "linear");
    w.add_f32("llama.rope.scaling.factor", 4.0f);
  }
  if (name == "qwen3_yarn") {  // a 40-token prompt past a 16-token original context: every band of the ramp
    w.add_string("qwen3.rope.scaling.type", "yarn");
    w.add_f32("qwen3.rope.scaling.factor", 4.0f);
    w.add_u32("qwen3.rope.scaling.original_context_length", 16);
  }
  gguf_add_synthetic_vocab(w, c.vocab_size);
  ASSERT_TRUE(w.write(path).has_value());
}

architecture_case architecture_of(const std::string& name) {
  architecture_case a;
  model_config& c = a.config;
  c.architecture = name.substr(0, name.find('_'));  // the case's architecture, before its variant
  c.dim = 256, c.hidden_dim = 768, c.n_layers = 4, c.n_heads = 8, c.n_kv_heads = 2, c.head_dim = 32;
  c.vocab_size = 512, c.seq_len = 512, c.shared_classifier = false, c.rope_theta = 10000.0f;
  if (name == "llama_wide_heads") c.head_dim = 64;  // attention.key_length past dim / heads (Mistral-Nemo)
  if (name == "qwen2") c.rope_theta = 1000000.0f, c.shared_classifier = true;
  if (c.architecture == "qwen3") c.n_heads = 8, c.n_kv_heads = 4, c.head_dim = 64, c.rope_theta = 1000000.0f;
  if (c.architecture == "qwen3moe") {
    c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 64, c.shared_classifier = true;
    c.n_experts = 8, c.n_experts_used = 8, c.expert_hidden_dim = 256, c.norm_topk_prob = true;
  }
  if (name == "qwen3moe_top2") c.n_experts_used = 2, a.quantized = false;
  if (c.architecture == "qwen2moe") {  // Qwen1.5-MoE's: q/k/v biases, top-k not renormalised, a shared expert
    c.rope_theta = 1000000.0f;
    c.n_experts = 4, c.n_experts_used = 4, c.expert_hidden_dim = 256, c.shared_expert_hidden_dim = 512;
    if (name == "qwen2moe_top2") c.n_experts_used = 2, a.quantized = false;
  }
  if (name.starts_with("llama_moe")) {  // Mixtral's: llama blocks, experts of feed_forward_length, top-k renormalised
    c.n_experts = 4, c.n_experts_used = 4, c.expert_hidden_dim = 256, c.norm_topk_prob = true;
    if (name == "llama_moe_top2") c.n_experts_used = 2, a.quantized = false;
  }
  // YaRN is RoPE arithmetic, which the quantized files leave as it is: checked on the F32 file. (Its
  // scale, 1.14 on cos and sin, sharpens the scores by 1.3, and with them the two fast paths' rounding
  // noise: Q8_0 0.023 against qwen3's 0.020, Q4_K_M 0.030 against 0.024.)
  if (name == "qwen3_yarn") a.quantized = false;
  if (name == "gpt2") c.n_heads = 4, c.n_layers = 2, c.vocab_size = 320, c.seq_len = 64;
  return a;
}

class llama_cpp_architecture : public testing::TestWithParam<std::string> {};

TEST_P(llama_cpp_architecture, matches_llama_cpp) {
  const test::llama_library llama;
  if (!llama.ok()) GTEST_SKIP() << llama.why();
  const architecture_case a = architecture_of(GetParam());
  const model_config& c = a.config;
  const auto f32_path = test::temp_file(GetParam() + "_random_f32.gguf");
  write_f32_model(GetParam(), c, f32_path);
  std::vector<std::vector<std::int32_t>> ids;
  for (const int n : {8, 40}) {
    auto& p = ids.emplace_back(1, 1);
    for (int i = 1; i < n; ++i) p.push_back(3 + (i * 7919 + n * 104729) % (c.vocab_size - 3));
  }
  const auto exact = llama.logits(f32_path, ids);
  ASSERT_FALSE(exact.empty()) << "llama.cpp could not evaluate " << f32_path;
  auto f32_model = gguf_model_load(f32_path, {.weights = weight_format::as_stored});
  ASSERT_TRUE(f32_model.has_value()) << f32_model.error();
  const double exact_error = worst_error(**f32_model, *kernels::kernel_table_select("scalar"), ids, exact);
  std::printf("[ %s F32 ] max |logit - llama.cpp's| %.2g\n", GetParam().c_str(), exact_error);
  EXPECT_LE(exact_error, 1e-3);
  for (const auto& [ftype, number] : {std::pair{"Q8_0", 7}, std::pair{"Q4_K_M", 15}}) {
    if (!a.quantized) break;
    SCOPED_TRACE(ftype);
    const auto quantized = test::temp_file(GetParam() + "_random_" + ftype + ".gguf");
    ASSERT_TRUE(llama.quantize(f32_path, quantized, number));
    const auto fast = llama.logits(quantized, ids);
    ASSERT_FALSE(fast.empty()) << "llama.cpp could not evaluate " << quantized;
    auto packed = gguf_model_load(quantized, {.weights = weight_format::as_stored});
    ASSERT_TRUE(packed.has_value()) << packed.error();
    const kernels::kernel_table& best = *kernels::kernel_table_select();
    const double packed_error = worst_error(**packed, best, ids, fast);
    std::printf("[ %s %s ] packed on %s: max |logit - llama.cpp's| %.3g\n", GetParam().c_str(), ftype,
                std::string(kernels::isa_name(best.which)).c_str(), packed_error);
    EXPECT_LE(packed_error, 0.03);
    std::filesystem::remove(quantized);
  }
  std::filesystem::remove(f32_path);
}

INSTANTIATE_TEST_SUITE_P(all, llama_cpp_architecture, testing::Values("llama", "llama_wide_heads", "llama_rope_freqs", "llama_linear_rope", "llama_moe",
                                                        "llama_moe_top2", "qwen2", "qwen2moe", "qwen2moe_top2", "qwen3", "qwen3_yarn", "qwen3moe", "qwen3moe_top2", "gpt2"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

// A split model as gguf_writer::write_splits writes it is one llama.cpp reads (from its first file) as the
// same model: its logits equal llama.cpp's over the single file, and pagedserve's over the split files
// match them as over any F32 file.
TEST(llama_cpp_split, reads_the_split_files_as_one_model) {
  const test::llama_library llama;
  if (!llama.ok()) GTEST_SKIP() << llama.why();
  const model_config c = architecture_of("qwen3").config;
  gguf_writer w;
  gguf_add_random_model(w, c, *gguf_recipe_parse("Q8_0"), 23);
  gguf_add_synthetic_vocab(w, c.vocab_size);
  const auto single = test::temp_file("split_reference.gguf");
  ASSERT_TRUE(w.write(single).has_value());
  auto first = w.write_splits(test::temp_file("split_reference").string(), 3);
  ASSERT_TRUE(first.has_value()) << first.error();
  const std::vector<std::vector<std::int32_t>> ids = {{1, 40, 300, 7, 99, 12, 250, 31, 64, 5}};
  const auto whole = llama.logits(single, ids);
  const auto split = llama.logits(*first, ids);
  ASSERT_FALSE(whole.empty());
  ASSERT_FALSE(split.empty()) << "llama.cpp could not read " << *first;
  EXPECT_EQ(split, whole);
  auto ours = gguf_model_load(*first, {.weights = weight_format::as_stored});
  ASSERT_TRUE(ours.has_value()) << ours.error();
  const double error = worst_error(**ours, *kernels::kernel_table_select(), ids, split);
  std::printf("[ split Q8_0 qwen3 ] packed: max |logit - llama.cpp's| %.3g\n", error);
  EXPECT_LE(error, 0.03);
  std::filesystem::remove(single);
  for (int s = 0; s < 3; ++s) std::filesystem::remove(gguf_split_path(test::temp_file("split_reference").string(), s, 3));
}

}  // namespace
}  // namespace pagedserve
