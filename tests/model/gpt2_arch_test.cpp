// GPT-2 (GPT2LMHeadModel) as small random-weight safetensors folders (fp32, bf16, fp16; with and
// without the `transformer.` prefix; with the old causal-mask buffers) and as GGUF files (gpt2 arch,
// F32 and F16), run through forward_pass with two sequences sharing paged steps against the scalar
// reference of gpt2_reference.hpp, on every kernel table. GGUF Q8_0 and Q4_0 files are checked against
// the reference run on the weights they hold (ggml's dequantization is exact).
//
// Tolerance: |engine - reference| <= 1e-4 on every logit (logits are O(1)), as for the other
// architectures: the reference uses the very values stored, the engine widens them exactly.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>

#include "model/engine_runner.hpp"
#include "model/gguf_test_model.hpp"
#include "model/gpt2_reference.hpp"
#include "model/gpt2_test_model.hpp"
#include "model/ggml_blocks.hpp"
#include "model/hf_model.hpp"
#include "model/model_load.hpp"

namespace pagedserve {
namespace {

using test::gpt2_spec;

std::vector<gpt2_spec> specs() {
  std::vector<gpt2_spec> v;
  {  // save_pretrained's layout: prefixed names, tied head, n_inner null, every attention key written
    gpt2_spec s;
    s.name = "gpt2";
    s.extra_json = R"(, "scale_attn_weights": true, "scale_attn_by_inverse_layer_idx": false,)"
                   R"( "reorder_and_upcast_attn": false, "add_cross_attention": false, "tie_word_embeddings": true)";
    v.push_back(s);
  }
  {  // the original checkpoints' layout: no prefix, mask buffers; untied, n_inner set, head size 12, 3 layers
    gpt2_spec s;
    s.name = "gpt2_unprefixed";
    s.dim = 36, s.heads = 3, s.layers = 3, s.inner = 50, s.eps = 1e-6;
    s.prefixed = false, s.mask_buffers = true, s.tied = false;
    v.push_back(s);
  }
  {  // gelu_pytorch_tanh (the same function), mask buffers under the prefix, 8 heads of 8
    gpt2_spec s;
    s.name = "gpt2_pytorch_tanh";
    s.dim = 64, s.heads = 8, s.activation = "gelu_pytorch_tanh", s.mask_buffers = true;
    v.push_back(s);
  }
  return v;
}

const std::vector<int> prompt_a = {1, 17, 42, 5, 96, 3, 60, 11}, prompt_b = {1, 88, 23, 23, 70};

// Largest |engine - reference| over both sequences, on table kt.
double worst_error(const model& m, const kernels::kernel_table& kt, const test::gpt2_reference& ref) {
  return test::engine_max_diff(test::run_engine(m, kt, prompt_a, prompt_b), ref.forward(prompt_a), ref.forward(prompt_b));
}

class gpt2_architecture : public testing::TestWithParam<gpt2_spec> {};

TEST_P(gpt2_architecture, hf_folder_logits_match_the_scalar_reference) {
  const gpt2_spec& s = GetParam();
  for (dtype type : {dtype::f32, dtype::bf16, dtype::f16}) {
    SCOPED_TRACE(std::string(dtype_name(type)));
    const auto tensors = test::gpt2_random_tensors(s, type, 1234);
    const auto dir = test::temp_dir(s.name + "_" + std::string(dtype_name(type)));
    test::write_gpt2_folder(dir, s, tensors, type);
    auto m = hf_model_load(dir);
    ASSERT_TRUE(m.has_value()) << m.error();
    const model& mm = **m;
    EXPECT_EQ(mm.config.architecture, "GPT2LMHeadModel");
    EXPECT_EQ(mm.config.norm, norm_kind::layer);
    EXPECT_EQ(mm.config.ffn, ffn_kind::gelu_tanh);
    EXPECT_EQ(mm.config.positions, position_kind::learned);
    EXPECT_EQ(mm.config.hidden_dim, s.hidden());
    EXPECT_EQ(mm.layers[0].wq.type, type) << "transposed in the stored dtype";
    EXPECT_EQ(mm.classifier == mm.token_embedding, s.tied);
    EXPECT_EQ(mm.generation.eos_token_ids, std::vector<int>{2});
    const test::gpt2_reference ref(s, tensors);
    for (const kernels::kernel_table* kt : kernels::kernel_tables_supported()) {
      SCOPED_TRACE(std::string(kernels::isa_name(kt->which)));
      const double worst = worst_error(mm, *kt, ref);
      std::printf("[ %s ] safetensors %s, %s: max |logit - reference| %.3g\n", s.name.c_str(),
                  std::string(dtype_name(type)).c_str(), std::string(kernels::isa_name(kt->which)).c_str(), worst);
      // As hf_arch_test: a table whose bf16 dot products round the activations to bf16 is bounded loosely.
      EXPECT_LE(worst, type == dtype::bf16 && kt->bf16_rounds_activations ? 0.15 : 1e-4);
    }
    std::filesystem::remove_all(dir);
  }
}

TEST_P(gpt2_architecture, gguf_logits_match_the_scalar_reference) {
  const gpt2_spec& s = GetParam();
  const auto tensors = test::gpt2_random_tensors(s, dtype::f32, 4321);
  for (const gguf_tensor_type type :
       {gguf_tensor_type::f32, gguf_tensor_type::f16, gguf_tensor_type::q8_0, gguf_tensor_type::q4_0}) {
    SCOPED_TRACE(gguf_tensor_type_name(static_cast<std::uint32_t>(type)));
    const bool quantized = type == gguf_tensor_type::q8_0 || type == gguf_tensor_type::q4_0;
    if (quantized && (s.dim % 32 != 0 || s.hidden() % 32 != 0)) continue;  // 32-wide blocks along each row
    const auto path = test::temp_dir(s.name + ".gguf");
    test::write_gpt2_gguf(path, s, tensors, type);
    // Quantized files dequantized exactly (--quantize f32): the fp32 reference over the stored values.
    auto m = model_load_any(path, {.weights = quantized ? weight_format::f32 : weight_format::as_stored});
    ASSERT_TRUE(m.has_value()) << m.error();
    EXPECT_EQ((*m)->config.architecture, "gpt2");
    EXPECT_EQ((*m)->config.positions, position_kind::learned);
    EXPECT_EQ((*m)->layers[0].wq.type, quantized ? dtype::f32 : *dtype_of_ggml_type(static_cast<std::uint32_t>(type)));
    const auto stored = test::gpt2_gguf_stored_values(tensors, type);  // exactly what the file holds
    const test::gpt2_reference ref(s, stored);
    for (const kernels::kernel_table* kt : kernels::kernel_tables_supported()) {
      SCOPED_TRACE(std::string(kernels::isa_name(kt->which)));
      const double worst = worst_error(**m, *kt, ref);
      std::printf("[ %s ] gguf %s, %s: max |logit - reference| %.3g\n", s.name.c_str(),
                  gguf_tensor_type_name(static_cast<std::uint32_t>(type)).c_str(),
                  std::string(kernels::isa_name(kt->which)).c_str(), worst);
      EXPECT_LE(worst, 1e-4);
    }
    std::filesystem::remove(path);
  }
}

// The same weights as an HF folder and as a GGUF F32 file are the same model, bit for bit: the folder's
// Conv1D transposition and c_attn split give the converter's rows exactly. Without output.weight the
// GGUF classifier is the token embedding.
TEST_P(gpt2_architecture, gguf_f32_equals_the_hf_folder_bit_for_bit) {
  const gpt2_spec& s = GetParam();
  const auto tensors = test::gpt2_random_tensors(s, dtype::f32, 777);
  const auto dir = test::temp_dir(s.name + "_hf"), path = test::temp_dir(s.name + "_same.gguf");
  test::write_gpt2_folder(dir, s, tensors, dtype::f32);
  test::write_gpt2_gguf(path, s, tensors, gguf_tensor_type::f32, /*tied_output=*/false);
  auto hf = model_load_any(dir);
  auto gg = model_load_any(path);
  ASSERT_TRUE(hf && gg) << (hf ? gg.error() : hf.error());
  EXPECT_EQ((*gg)->classifier == (*gg)->token_embedding, s.tied);
  const auto& kt = *kernels::kernel_table_select();
  EXPECT_EQ(test::run_engine(**hf, kt, prompt_a, prompt_b), test::run_engine(**gg, kt, prompt_a, prompt_b));
  std::filesystem::remove_all(dir);
  std::filesystem::remove(path);
}

// A bf16 folder gives the same bits kept as bf16, widened to fp32 at load, and written as fp32 (on the
// best table whose bf16 path widens exactly).
TEST_P(gpt2_architecture, bf16_in_memory_equals_fp32_bit_for_bit) {
  const gpt2_spec& s = GetParam();
  const auto tensors = test::gpt2_random_tensors(s, dtype::bf16, 99);
  const auto dir16 = test::temp_dir(s.name + "_bits16"), dir32 = test::temp_dir(s.name + "_bits32");
  test::write_gpt2_folder(dir16, s, tensors, dtype::bf16);
  test::write_gpt2_folder(dir32, s, tensors, dtype::f32);
  auto as_bf16 = hf_model_load(dir16);
  auto widened = model_load_any(dir16, {.weights = weight_format::f32});
  auto as_f32 = hf_model_load(dir32);
  ASSERT_TRUE(as_bf16 && widened && as_f32);
  EXPECT_EQ((*widened)->layers[0].w_up.type, dtype::f32);
  const auto tables = kernels::kernel_tables_supported();
  const auto exact = std::find_if(tables.begin(), tables.end(), [](const auto* t) { return !t->bf16_rounds_activations; });
  ASSERT_NE(exact, tables.end());
  const auto x = test::run_engine(**as_bf16, **exact, prompt_a, prompt_b);
  EXPECT_EQ(x, test::run_engine(**widened, **exact, prompt_a, prompt_b));
  EXPECT_EQ(x, test::run_engine(**as_f32, **exact, prompt_a, prompt_b));
  std::filesystem::remove_all(dir16);
  std::filesystem::remove_all(dir32);
}

INSTANTIATE_TEST_SUITE_P(all, gpt2_architecture, testing::ValuesIn(specs()),
                         [](const testing::TestParamInfo<gpt2_spec>& info) { return info.param.name; });

// int8 (W8A8) GPT-2: batch invariant on every table (the int8 sums are exact) and near fp32.
TEST(gpt2_int8, is_batch_invariant_and_close_to_fp32) {
  const gpt2_spec s = specs().front();
  const auto tensors = test::gpt2_random_tensors(s, dtype::f32, 5);
  const auto dir = test::temp_dir("gpt2_int8");
  test::write_gpt2_folder(dir, s, tensors, dtype::f32);
  auto fp32 = hf_model_load(dir);
  auto int8 = model_load_any(dir, {.weights = weight_format::int8});
  ASSERT_TRUE(fp32 && int8) << (fp32 ? int8.error() : fp32.error());
  EXPECT_EQ((*int8)->layers[0].w_up.type, dtype::i8);
  const std::vector<int> c = {1, 4, 9, 33, 2};
  for (const kernels::kernel_table* kt : kernels::kernel_tables_supported()) {
    SCOPED_TRACE(std::string(kernels::isa_name(kt->which)));
    const auto with_b = test::run_engine(**int8, *kt, prompt_a, prompt_b), with_c = test::run_engine(**int8, *kt, prompt_a, c);
    EXPECT_EQ(with_b[0], with_c[0]) << "A's logits depend on its step neighbours";
    const auto want = test::run_engine(**fp32, *kt, prompt_a, prompt_b);
    double worst = 0.0, ss = 0.0;
    int n = 0;
    for (std::size_t p = 0; p < want[0].size(); ++p)
      for (int v = 0; v < s.vocab; ++v, ++n) {
        worst = std::max(worst, static_cast<double>(std::abs(with_b[0][p][v] - want[0][p][v])));
        ss += static_cast<double>(want[0][p][v]) * want[0][p][v];
      }
    EXPECT_LE(worst, 0.25 * std::sqrt(ss / n)) << "as hf_arch_test's int8 bound";
  }
  std::filesystem::remove_all(dir);
}

// reorder_and_upcast_attn changes nothing in fp32: accepted, and the logits are those without it.
TEST(gpt2_config, reorder_and_upcast_attn_is_accepted) {
  gpt2_spec s = specs().front();
  const auto tensors = test::gpt2_random_tensors(s, dtype::f32, 8);
  s.extra_json = R"(, "reorder_and_upcast_attn": true)";
  const auto dir = test::temp_dir("gpt2_reorder");
  test::write_gpt2_folder(dir, s, tensors, dtype::f32);
  auto m = hf_model_load(dir);
  ASSERT_TRUE(m.has_value()) << m.error();
  EXPECT_LE(worst_error(**m, *kernels::kernel_table_select(), test::gpt2_reference(s, tensors)), 1e-4);
  std::filesystem::remove_all(dir);
}

// A config.json with only the architecture takes GPT2Config's defaults: GPT-2 small's shape, ids 50256.
TEST(gpt2_config, absent_keys_take_gpt2configs_defaults) {
  const auto dir = test::temp_dir("gpt2_defaults");
  gpt2_spec s = specs().front();
  s.dim = 768, s.heads = 12, s.layers = 1, s.positions = 1024, s.vocab = 50257;
  test::write_gpt2_folder(dir, s, test::gpt2_random_tensors(s, dtype::bf16, 1), dtype::bf16);
  std::filesystem::remove(dir / "generation_config.json");
  std::ofstream(dir / "config.json") << R"({"architectures": ["GPT2LMHeadModel"], "n_layer": 1})";
  auto m = hf_model_load(dir);
  ASSERT_TRUE(m.has_value()) << m.error();
  const model_config& c = (*m)->config;
  EXPECT_EQ(c.dim, 768);
  EXPECT_EQ(c.n_heads, 12);
  EXPECT_EQ(c.n_kv_heads, 12);
  EXPECT_EQ(c.hidden_dim, 3072);
  EXPECT_EQ(c.seq_len, 1024);
  EXPECT_EQ(c.vocab_size, 50257);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-5f);
  EXPECT_TRUE(c.shared_classifier);
  EXPECT_EQ((*m)->generation.eos_token_ids, std::vector<int>{50256});
  EXPECT_EQ((*m)->generation.bos_token_id, 50256);
  std::filesystem::remove_all(dir);
}

// What the forward pass does not implement is refused, naming the key.
TEST(gpt2_config, unsupported_options_name_the_key) {
  gpt2_spec base = specs().front();
  base.extra_json.clear();  // each case adds its key once
  const auto tensors = test::gpt2_random_tensors(base, dtype::f32, 3);
  const auto dir = test::temp_dir("gpt2_refused");
  auto refused = [&](const gpt2_spec& s, const std::string& key, const std::string& config_json) {
    test::write_gpt2_folder(dir, s, tensors, dtype::f32);
    std::ofstream(dir / "config.json") << config_json;
    auto m = hf_model_load(dir);
    ASSERT_FALSE(m.has_value()) << config_json;
    EXPECT_NE(m.error().find("'" + key + "'"), std::string::npos) << m.error();
  };
  for (const auto& [key, value] : {std::pair{"scale_attn_weights", "false"}, std::pair{"scale_attn_by_inverse_layer_idx", "true"},
                                   std::pair{"add_cross_attention", "true"}, std::pair{"n_inner", "\"wide\""}}) {
    SCOPED_TRACE(key);
    gpt2_spec s = base;
    if (std::string(key) == "n_inner") s.inner = 0;
    std::string j = test::gpt2_config_json(s);
    if (std::string(key) == "n_inner")
      j.replace(j.find("\"n_inner\": null"), std::string("\"n_inner\": null").size(), "\"n_inner\": \"wide\"");
    else
      j.insert(j.size() - 1, ", \"" + std::string(key) + "\": " + value);
    refused(s, key, j);
  }
  gpt2_spec relu = base;
  relu.activation = "relu";
  refused(relu, "activation_function", test::gpt2_config_json(relu));
  std::filesystem::remove_all(dir);
}

// A tensor GPT-2 does not have, a missing one, and a Conv1D weight stored [out, in] are errors naming it.
TEST(gpt2_tensors, unknown_missing_and_misshapen_tensors_are_refused) {
  const gpt2_spec s = specs().front();
  const auto dir = test::temp_dir("gpt2_bad_tensors");
  auto check = [&](test::tensor_map tensors, const std::string& want) {
    test::write_gpt2_folder(dir, s, tensors, dtype::f32);
    auto m = hf_model_load(dir);
    ASSERT_FALSE(m.has_value()) << want;
    EXPECT_NE(m.error().find(want), std::string::npos) << m.error();
  };
  auto extra = test::gpt2_random_tensors(s, dtype::f32, 1);
  extra["h.0.attn.rotary.weight"] = {{4}, {1, 2, 3, 4}};
  check(extra, "'transformer.h.0.attn.rotary.weight' is not part of GPT2LMHeadModel");
  auto missing = test::gpt2_random_tensors(s, dtype::f32, 1);
  missing.erase("h.1.ln_2.bias");
  check(missing, "missing tensor 'transformer.h.1.ln_2.bias'");
  auto transposed = test::gpt2_random_tensors(s, dtype::f32, 1);
  transposed["h.0.mlp.c_fc.weight"].shape = {s.hidden(), s.dim};  // nn.Linear's [out, in]
  check(transposed, "'transformer.h.0.mlp.c_fc.weight' has shape [128, 32], expected [32, 128]");
  std::filesystem::remove_all(dir);
}

// model_check names each GPT-2 part a loader could leave out: LayerNorm and MLP biases, the learned
// position embedding (with its shape), and a gate the GELU MLP must not have.
TEST(gpt2_check, model_check_names_the_missing_part) {
  const gpt2_spec s = specs().front();
  const auto dir = test::temp_dir("gpt2_check");
  test::write_gpt2_folder(dir, s, test::gpt2_random_tensors(s, dtype::f32, 6), dtype::f32);
  auto loaded = hf_model_load(dir);
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  ASSERT_TRUE(model_check(**loaded).has_value());
  const std::vector<std::pair<std::string, std::function<void(model&)>>> cases = {
      {"layer 1 attention norm bias is missing", [](model& m) { m.layers[1].att_norm_bias = nullptr; }},
      {"layer 0 ffn norm bias is missing", [](model& m) { m.layers[0].ffn_norm_bias = nullptr; }},
      {"layer 0 up bias is missing", [](model& m) { m.layers[0].b_up = nullptr; }},
      {"layer 1 down bias is missing", [](model& m) { m.layers[1].b_down = nullptr; }},
      {"final norm bias is missing", [](model& m) { m.final_norm_bias = nullptr; }},
      {"position embedding is missing", [](model& m) { m.position_embedding = {}; }},
      {"position embedding has shape [23, 32], expected [24, 32]", [](model& m) { m.position_embedding.rows = 23; }},
      {"layer 0 has a gate projection", [](model& m) { m.layers[0].w_gate = m.layers[0].w_up; }},
      {"rope_inv_freq has 4 entries, expected 0", [](model& m) { m.rope_inv_freq.assign(4, 1.0f); }},
  };
  for (const auto& [want, edit] : cases) {
    model m = **loaded;
    edit(m);
    const auto r = model_check(m);
    ASSERT_FALSE(r.has_value()) << want;
    EXPECT_NE(r.error().find(want), std::string::npos) << r.error();
  }
  std::filesystem::remove_all(dir);
}

// GGUF: a position embedding shorter than gpt2.context_length, or a missing LayerNorm bias, is refused
// naming the tensor.
TEST(gpt2_gguf, misshapen_or_missing_tensors_are_refused) {
  const gpt2_spec s = specs().front();
  const auto tensors = test::gpt2_random_tensors(s, dtype::f32, 2);
  const auto path = test::temp_dir("gpt2_bad.gguf");
  gpt2_spec longer = s;
  longer.positions = s.positions + 1;  // metadata says 25 positions; position_embd keeps 24 rows
  test::write_gpt2_gguf(path, longer, tensors, gguf_tensor_type::f32);
  auto bad = model_load_any(path);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().find("tensor 'position_embd.weight' has dimensions [32, 24], expected [32, 25]"),
            std::string::npos)
      << bad.error();
  gguf_writer w;  // every gpt2 key, and blk.0's attention norm without its bias
  w.add_string("general.architecture", "gpt2");
  for (const auto& [key, v] : {std::pair{"gpt2.context_length", s.positions}, std::pair{"gpt2.embedding_length", s.dim},
                               std::pair{"gpt2.feed_forward_length", s.hidden()}, std::pair{"gpt2.block_count", 1},
                               std::pair{"gpt2.attention.head_count", s.heads}})
    w.add_u32(key, static_cast<std::uint32_t>(v));
  w.add_f32("gpt2.attention.layer_norm_epsilon", 1e-5f);
  const std::vector<float> embd(static_cast<std::size_t>(s.vocab) * s.dim, 0.5f), pos(static_cast<std::size_t>(s.positions) * s.dim),
      norm(s.dim, 1.0f);
  w.add_tensor("token_embd.weight", {static_cast<std::uint64_t>(s.dim), static_cast<std::uint64_t>(s.vocab)},
               gguf_tensor_type::f32, embd);
  w.add_tensor("position_embd.weight", {static_cast<std::uint64_t>(s.dim), static_cast<std::uint64_t>(s.positions)},
               gguf_tensor_type::f32, pos);
  w.add_tensor("blk.0.attn_norm.weight", {static_cast<std::uint64_t>(s.dim)}, gguf_tensor_type::f32, norm);
  ASSERT_TRUE(w.write(path).has_value());
  auto no_bias = model_load_any(path);
  ASSERT_FALSE(no_bias.has_value());
  EXPECT_NE(no_bias.error().find("missing tensor 'blk.0.attn_norm.bias'"), std::string::npos) << no_bias.error();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pagedserve
