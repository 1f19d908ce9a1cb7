// Small random-weight Llama, Qwen2, Qwen3 (also with YaRN) and Qwen3-MoE models written as GGUF files (F32, F16, Q8_0,
// Q4_0) the way llama.cpp's converter writes them, loaded through model_load_any and run through the
// engine against the scalar reference of hf_reference.hpp.
//
// Tolerances: F32 and F16 files, |engine - reference| <= 1e-4 on every logit, the reference using the
// stored values. Q8_0 and Q4_0 files, the same 1e-4 against the reference run on the dequantized
// weights (exact dequantization). Against the unquantized weights the logits move by at most 3% (Q8_0)
// and 30% (Q4_0) of the largest |logit| (quantization_error_is_bounded; measured 0.7-1.3% and 13-25%).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include <chrono>

#include "model/engine_runner.hpp"
#include "model/gguf_test_model.hpp"
#include "model/hf_reference.hpp"
#include "model/ggml_blocks.hpp"
#include "model/gguf_model.hpp"
#include "model/gguf_random_model.hpp"
#include "model/hf_model.hpp"
#include "model/model_load.hpp"

namespace pagedserve {
namespace {

using test::arch_spec;

// Widths are multiples of 32 where a matrix has them as columns (Q8_0/Q4_0 blocks run along rows).
std::vector<arch_spec> specs() {
  std::vector<arch_spec> v;
  {  // Llama: GQA 4:2, untied; Q/K rows permuted in the file, interleaved RoPE in the engine
    arch_spec s = test::make_spec("llama", "LlamaForCausalLM", 64, 96, 2, 4, 2, 0);
    s.eps = 1e-5;
    v.push_back(s);
  }
  {  // Llama with attention biases (the q/k biases are permuted too), tied
    arch_spec s = test::make_spec("llama_bias", "LlamaForCausalLM", 32, 64, 2, 2, 2, 0);
    s.attention_bias = true;
    s.tied = true;
    v.push_back(s);
  }
  {  // Qwen2: q/k/v biases, tied, neox RoPE
    arch_spec s = test::make_spec("qwen2", "Qwen2ForCausalLM", 32, 64, 2, 4, 2, 0);
    s.qkv_bias = true;
    s.tied = true;
    s.theta = 1e6;
    v.push_back(s);
  }
  {  // Qwen3: q_norm/k_norm, head_dim 16 set explicitly (key_length), untied
    arch_spec s = test::make_spec("qwen3", "Qwen3ForCausalLM", 64, 64, 2, 4, 2, 16);
    s.qk_norm = true;
    s.theta = 1e6;
    v.push_back(s);
  }
  {  // Qwen3 with YaRN (its long-context GGUFs): factor 4 over a 16-token original context, so the
     // prompts cross every band (kept, ramped, slowed)
    arch_spec s = test::make_spec("qwen3_yarn", "Qwen3ForCausalLM", 64, 64, 2, 4, 2, 32);
    s.qk_norm = true;
    s.yarn_scaling = true, s.factor = 4.0, s.original_max_pos = 16;
    v.push_back(s);
  }
  {  // Llama with YaRN and HF's attention_factor given (yarn_attn_factor)
    arch_spec s = test::make_spec("llama_yarn", "LlamaForCausalLM", 64, 96, 2, 4, 2, 0);
    s.yarn_scaling = true, s.factor = 2.0, s.original_max_pos = 64, s.yarn_attention_factor = 1.3;
    v.push_back(s);
  }
  {  // Qwen3-MoE: 4 experts, top-2 renormalised, stacked expert tensors
    arch_spec s = test::make_spec("qwen3moe", "Qwen3MoeForCausalLM", 32, 64, 2, 2, 1, 16);
    s.qk_norm = true;
    s.experts = 4, s.top_k = 2, s.moe_hidden = 32, s.norm_topk = true;
    v.push_back(s);
  }
  return v;
}

const std::vector<int> prompt_a = {1, 17, 42, 5, 96, 3, 60, 11}, prompt_b = {1, 88, 23, 23, 70};

class gguf_architecture : public testing::TestWithParam<arch_spec> {};

TEST_P(gguf_architecture, logits_match_the_scalar_reference) {
  const arch_spec& s = GetParam();
  const auto tensors = test::spec_random_tensors(s, dtype::f32, 4321);
  for (const gguf_tensor_type type :
       {gguf_tensor_type::f32, gguf_tensor_type::f16, gguf_tensor_type::q8_0, gguf_tensor_type::q4_0}) {
    SCOPED_TRACE(gguf_tensor_type_name(static_cast<std::uint32_t>(type)));
    const auto path = test::temp_dir(s.name + ".gguf");
    test::write_spec_gguf(path, s, tensors, type);
    // Quantized files are dequantized exactly (--quantize f32) so the fp32 reference over the stored
    // values applies; packed blocks (activations quantized too) are checked against llama.cpp's own
    // logits in gguf_quant_golden_test.
    const bool quantized = type == gguf_tensor_type::q8_0 || type == gguf_tensor_type::q4_0;
    auto m = model_load_any(path, {.weights = quantized ? weight_format::f32 : weight_format::as_stored});
    ASSERT_TRUE(m.has_value()) << m.error();
    EXPECT_EQ((*m)->config.architecture, test::gguf_arch_name(s));
    EXPECT_EQ((*m)->classifier == (*m)->token_embedding, s.tied);
    EXPECT_EQ((*m)->config.rope, s.architecture == "LlamaForCausalLM" ? kernels::rope_style::interleaved
                                                                       : kernels::rope_style::neox);
    EXPECT_EQ((*m)->layers[0].wq.type, quantized ? dtype::f32 : *dtype_of_ggml_type(static_cast<std::uint32_t>(type)));
    if (quantized) {
      EXPECT_EQ(model_load_any(path).value()->layers[0].wq.type, *dtype_of_ggml_type(static_cast<std::uint32_t>(type)))
          << "kept as stored by default";
    }

    const auto stored = test::gguf_stored_values(tensors, type);
    const test::hf_reference ref(s, stored);
    const auto want_a = ref.forward(prompt_a), want_b = ref.forward(prompt_b);
    for (const kernels::kernel_table* kt : kernels::kernel_tables_supported()) {
      SCOPED_TRACE(std::string(kernels::isa_name(kt->which)));
      EXPECT_LE(test::engine_max_diff(test::run_engine(**m, *kt, prompt_a, prompt_b), want_a, want_b), 1e-4);
    }
    std::filesystem::remove(path);
  }
}

// The same weights as an HF folder and as a GGUF F32 file are the same model, bit for bit: the GGUF
// llama permutation and interleaved RoPE exactly undo each other.
TEST_P(gguf_architecture, gguf_f32_equals_the_hf_folder) {
  const arch_spec& s = GetParam();
  const auto tensors = test::spec_random_tensors(s, dtype::f32, 777);
  const auto dir = test::temp_dir(s.name + "_hf"), path = test::temp_dir(s.name + "_same.gguf");
  test::write_spec_folder(dir, s, tensors, dtype::f32);
  test::write_spec_gguf(path, s, tensors, gguf_tensor_type::f32);
  auto hf = model_load_any(dir);
  auto gg = model_load_any(path);
  ASSERT_TRUE(hf && gg) << (hf ? gg.error() : hf.error());
  const auto& kt = *kernels::kernel_table_select();
  const auto x = test::run_engine(**hf, kt, prompt_a, prompt_b), y = test::run_engine(**gg, kt, prompt_a, prompt_b);
  double worst = 0.0;
  for (int seq = 0; seq < 2; ++seq)
    for (std::size_t p = 0; p < x[seq].size(); ++p)
      for (std::size_t v = 0; v < x[seq][p].size(); ++v)
        worst = std::max(worst, static_cast<double>(std::abs(x[seq][p][v] - y[seq][p][v])));
  // Interleaved and rotate-half RoPE compute the same products in the same order; allow rounding only.
  EXPECT_LE(worst, 1e-5);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(path);
}

// Q8_0 and Q4_0 against the unquantized model: bounded, and Q8_0 much closer than Q4_0.
TEST_P(gguf_architecture, quantization_error_is_bounded) {
  const arch_spec& s = GetParam();
  const auto tensors = test::spec_random_tensors(s, dtype::f32, 99);
  const test::hf_reference exact(s, tensors);
  const auto want_a = exact.forward(prompt_a), want_b = exact.forward(prompt_b);
  double err[2] = {};
  int i = 0;
  for (const gguf_tensor_type type : {gguf_tensor_type::q8_0, gguf_tensor_type::q4_0}) {
    const auto path = test::temp_dir(s.name + "_q.gguf");
    test::write_spec_gguf(path, s, tensors, type);
    auto m = model_load_any(path);
    ASSERT_TRUE(m.has_value()) << m.error();
    err[i++] = test::engine_max_diff(test::run_engine(**m, *kernels::kernel_table_select(), prompt_a, prompt_b),
                                     want_a, want_b);
    std::filesystem::remove(path);
  }
  double scale = 0.0;  // the largest |logit|: errors are stated relative to it
  for (const auto* want : {&want_a, &want_b})
    for (const auto& row : *want)
      for (const double v : row) scale = std::max(scale, std::abs(v));
  std::printf("[ %s ] max logit error vs unquantized, relative to max |logit| %.2f: Q8_0 %.4f, Q4_0 %.4f\n",
              s.name.c_str(), scale, err[0] / scale, err[1] / scale);
  EXPECT_LE(err[0], 0.03 * scale);
  EXPECT_LE(err[1], 0.3 * scale);
  EXPECT_LT(err[0], err[1]);
}

// Q8_0 converted into bf16 at load equals its exact dequantization rounded to bf16.
TEST_P(gguf_architecture, quantized_to_bf16_in_memory) {
  const arch_spec& s = GetParam();
  const auto path = test::temp_dir(s.name + "_bf16.gguf");
  test::write_spec_gguf(path, s, test::spec_random_tensors(s, dtype::f32, 5), gguf_tensor_type::q8_0);
  auto f32 = model_load_any(path);
  auto bf16 = model_load_any(path, {.weights = weight_format::bf16});
  ASSERT_TRUE(f32 && bf16);
  const weight& a = (*f32)->layers[0].wq;
  const weight& b = (*bf16)->layers[0].wq;
  ASSERT_EQ(b.type, dtype::bf16);
  ASSERT_EQ(a.type, dtype::q8_0);
  for (std::size_t k = 0; k < a.n_elements(); ++k) ASSERT_EQ(b.u16()[k], f32_to_bf16(weight_at(a, k))) << k;
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(all, gguf_architecture, testing::ValuesIn(specs()),
                         [](const testing::TestParamInfo<arch_spec>& info) { return info.param.name; });

// The YaRN keys llama.cpp reads beyond the ones convert_hf_to_gguf.py always writes: read (beta_slow
// moves the ramp's end), or refused naming the key (an extrapolation mix HF has no counterpart for, a
// scaling type we do not run, a missing factor).
TEST(gguf_rope_scaling, yarn_keys_are_read_or_refused_by_name) {
  const arch_spec s = specs()[4];
  ASSERT_EQ(s.name, "qwen3_yarn");
  const auto tensors = test::spec_random_tensors(s, dtype::f32, 11);
  const std::string p = test::gguf_arch_name(s) + ".rope.scaling.";
  const auto load = [&](const std::string& skip, const std::function<void(gguf_writer&)>& add) {
    gguf_writer w;
    test::gguf_add_spec_metadata(w, s, skip);
    add(w);
    test::gguf_add_spec_tensors(w, s, tensors, gguf_tensor_type::f32);
    const auto path = test::temp_dir("yarn_keys.gguf");
    EXPECT_TRUE(w.write(path).has_value());
    auto m = model_load_any(path);
    std::filesystem::remove(path);
    return m;
  };
  auto plain = load("", [](gguf_writer&) {});
  ASSERT_TRUE(plain.has_value()) << plain.error();
  auto unit_mix = load("", [&](gguf_writer& w) { w.add_f32(p + "yarn_ext_factor", 1.0f); });
  ASSERT_TRUE(unit_mix.has_value()) << unit_mix.error();
  EXPECT_EQ((*unit_mix)->rope_inv_freq, (*plain)->rope_inv_freq);
  auto beta = load("", [&](gguf_writer& w) { w.add_f32(p + "yarn_beta_slow", 0.25f); });
  ASSERT_TRUE(beta.has_value()) << beta.error();
  EXPECT_EQ((*beta)->config.rope_scaling.beta_slow, 0.25f);
  EXPECT_NE((*beta)->rope_inv_freq, (*plain)->rope_inv_freq);
  const auto refused = [](const auto& m) { return m ? std::string("(loaded)") : m.error(); };
  EXPECT_THAT(refused(load("", [&](gguf_writer& w) { w.add_f32(p + "yarn_ext_factor", 0.5f); })),
              testing::HasSubstr("yarn_ext_factor"));
  EXPECT_THAT(refused(load(p + "type", [&](gguf_writer& w) { w.add_string(p + "type", "longrope"); })),
              testing::HasSubstr("'longrope' is not supported"));
  EXPECT_THAT(refused(load(p + "factor", [](gguf_writer&) {})), testing::HasSubstr("rope.scaling.factor"));
}

// Mixtral as files converted before April 2024 hold it, a tensor an expert (ffn_gate.E.weight ...; llama.cpp
// no longer reads them), is the model its stacked tensors (ffn_gate_exps ...) hold: same weights, same logits.
TEST(gguf_mixtral, per_expert_tensors_are_the_stacked_experts) {
  model_config c;
  c.architecture = "llama";
  c.dim = 64, c.hidden_dim = 96, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.vocab_size = 300, c.seq_len = 64;
  c.n_experts = 4, c.n_experts_used = 2, c.expert_hidden_dim = 96, c.norm_topk_prob = true;
  std::shared_ptr<const model> loaded[2];
  for (const gguf_expert_layout layout : {gguf_expert_layout::stacked, gguf_expert_layout::per_expert}) {
    gguf_writer w;
    gguf_add_random_model(w, c, *gguf_recipe_parse("F32"), 5, layout);
    gguf_add_synthetic_vocab(w, c.vocab_size);
    const auto path = test::temp_dir("mixtral_layout.gguf");
    ASSERT_TRUE(w.write(path).has_value());
    auto m = model_load_any(path);
    std::filesystem::remove(path);
    ASSERT_TRUE(m.has_value()) << m.error();
    EXPECT_EQ((*m)->config.n_experts, 4);
    EXPECT_EQ((*m)->config.expert_hidden_dim, 96);
    EXPECT_TRUE((*m)->config.norm_topk_prob);
    loaded[layout == gguf_expert_layout::per_expert] = *m;
  }
  for (int l = 0; l < c.n_layers; ++l)
    for (int e = 0; e < c.n_experts; ++e)
      for (const auto member : {&expert_weights::gate, &expert_weights::up, &expert_weights::down}) {
        const weight &a = loaded[0]->layers[l].experts[e].*member, &b = loaded[1]->layers[l].experts[e].*member;
        ASSERT_EQ(a.n_elements(), b.n_elements());
        for (std::size_t k = 0; k < a.n_elements(); ++k) ASSERT_EQ(weight_at(a, k), weight_at(b, k)) << l << " " << e;
      }
  const auto& kt = *kernels::kernel_table_select();
  EXPECT_EQ(test::run_engine(*loaded[0], kt, prompt_a, prompt_b), test::run_engine(*loaded[1], kt, prompt_a, prompt_b));
}

// Load time of a mid-size random model, printed for the record (not pass/fail; run it with
// --gtest_also_run_disabled_tests).
TEST(gguf_load, DISABLED_mid_size_model_load_time) {
  arch_spec s = test::make_spec("mid", "Qwen3ForCausalLM", 1024, 2816, 8, 16, 8, 64);
  s.qk_norm = true;
  s.vocab = 32000;
  const auto tensors = test::spec_random_tensors(s, dtype::f32, 1);
  for (const gguf_tensor_type type : {gguf_tensor_type::f16, gguf_tensor_type::q8_0}) {
    const auto path = test::temp_dir("mid.gguf");
    test::write_spec_gguf(path, s, tensors, type);
    const auto t0 = std::chrono::steady_clock::now();
    auto m = model_load_any(path);
    const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(m.has_value()) << m.error();
    std::printf("[ mid ] %s: %.1f MB file, loaded in %.1f ms\n", gguf_tensor_type_name(static_cast<std::uint32_t>(type)).c_str(),
                std::filesystem::file_size(path) / 1e6, ms);
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace pagedserve
