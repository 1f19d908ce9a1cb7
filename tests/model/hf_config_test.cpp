// config.json as transformers 4.x and 5.x write it, for every architecture: the same weights under
// both give the same model and bit-identical logits; every key that would change the arithmetic in
// a way the forward pass does not implement is refused, naming the key; tensors the config does not
// account for are refused, naming the tensor.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/engine_runner.hpp"
#include "model/hf_arch_specs.hpp"
#include "model/hf_config.hpp"
#include "model/hf_reference.hpp"
#include "model/hf_model.hpp"

namespace pagedserve {
namespace {

using test::arch_spec;
using test::config_style;

// The first kernel table: every table runs the same loader output, and hf_arch_test covers the tables.
const kernels::kernel_table& table() { return *kernels::kernel_tables_supported().front(); }

double worst_difference(const std::vector<std::vector<std::vector<float>>>& got, const test::hf_reference& ref,
                        const std::vector<int>& a, const std::vector<int>& b, int vocab) {
  double worst = 0.0;
  for (int seq = 0; seq < 2; ++seq) {
    const auto want = ref.forward(seq == 0 ? a : b);
    for (std::size_t p = 0; p < want.size(); ++p)
      for (int v = 0; v < vocab; ++v) worst = std::max(worst, std::abs(got[seq][p][v] - want[p][v]));
  }
  return worst;
}

class hf_config_versions : public testing::TestWithParam<arch_spec> {};

// 5.x folders of MoE models carry fused expert tensors (experts.gate_up_proj / down_proj).
TEST_P(hf_config_versions, v4_and_v5_configs_give_the_same_logits) {
  const arch_spec& s = GetParam();
  const auto tensors = test::spec_random_tensors(s, dtype::f32, 77);
  const auto dir4 = test::temp_dir(s.name + "_v4"), dir5 = test::temp_dir(s.name + "_v5");
  test::write_spec_folder(dir4, s, tensors, dtype::f32, 1, config_style::v4);
  test::write_spec_folder(dir5, s, s.experts > 0 ? test::fuse_expert_tensors(s, tensors) : tensors, dtype::f32, 1,
                          config_style::v5);
  auto m4 = hf_model_load(dir4);
  auto m5 = hf_model_load(dir5);
  ASSERT_TRUE(m4.has_value()) << m4.error();
  ASSERT_TRUE(m5.has_value()) << m5.error();
  const model_config &c4 = (*m4)->config, &c5 = (*m5)->config;
  EXPECT_EQ(c4.rope_theta, c5.rope_theta);
  EXPECT_EQ((*m4)->rope_inv_freq, (*m5)->rope_inv_freq);
  EXPECT_EQ(c4.rope_scaling.attention_factor, c5.rope_scaling.attention_factor);
  EXPECT_EQ(c4.n_experts, c5.n_experts);
  for (int l = 0; l < s.layers; ++l) {
    EXPECT_EQ(c4.attention_window(l), s.window(l)) << "layer " << l;
    EXPECT_EQ(c5.attention_window(l), s.window(l)) << "layer " << l;
  }
  const std::vector<int> a = {1, 17, 42, 5, 96, 3, 60, 11}, b = {1, 88, 23, 23, 70};
  const auto got4 = test::run_engine(**m4, table(), a, b), got5 = test::run_engine(**m5, table(), a, b);
  EXPECT_EQ(got4, got5) << "4.x and 5.x configs of the same weights differ";
  EXPECT_LE(worst_difference(got5, test::hf_reference(s, tensors), a, b, s.vocab), 1e-4);
  std::filesystem::remove_all(dir4);
  std::filesystem::remove_all(dir5);
}

INSTANTIATE_TEST_SUITE_P(all, hf_config_versions, testing::ValuesIn(test::arch_specs()),
                         [](const testing::TestParamInfo<arch_spec>& info) { return info.param.name; });

// transformers 5's layer_types can mark any layers sliding, not only a tail of them.
TEST(hf_config, layer_types_choose_the_sliding_layers) {
  arch_spec s = test::make_spec("qwen2_interleaved", "Qwen2ForCausalLM", 32, 40, 3, 4, 2, 0);
  s.qkv_bias = true;
  s.sliding_window = 3;
  s.sliding_layers = {1, 0, 1};
  const auto tensors = test::spec_random_tensors(s, dtype::f32, 8);
  const auto dir = test::temp_dir(s.name);
  test::write_spec_folder(dir, s, tensors, dtype::f32, 1, config_style::v5);
  auto m = hf_model_load(dir);
  ASSERT_TRUE(m.has_value()) << m.error();
  EXPECT_EQ((*m)->config.attention_window(0), 3);
  EXPECT_EQ((*m)->config.attention_window(1), 0);
  EXPECT_EQ((*m)->config.attention_window(2), 3);
  const std::vector<int> a = {1, 17, 42, 5, 96, 3, 60, 11}, b = {1, 88, 23, 23, 70};
  EXPECT_LE(worst_difference(test::run_engine(**m, table(), a, b), test::hf_reference(s, tensors), a, b, s.vocab), 1e-4);
  std::filesystem::remove_all(dir);
}

// A config.json text with `extra` spliced in as further top-level keys.
std::string with_keys(const arch_spec& s, config_style style, const std::string& extra) {
  std::string j = test::spec_config_json(s, style);
  return j.substr(0, j.size() - 1) + ", " + extra + "}";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

arch_spec llama() { return test::make_spec("llama", "LlamaForCausalLM", 32, 40, 2, 4, 2, 0); }
arch_spec qwen3() {
  arch_spec s = test::make_spec("qwen3", "Qwen3ForCausalLM", 32, 40, 2, 4, 2, 16);
  s.qk_norm = true;
  return s;
}

TEST(hf_config, keys_that_change_the_arithmetic_are_refused_by_name) {
  const arch_spec mistral = test::make_spec("mistral", "MistralForCausalLM", 32, 40, 2, 4, 2, 0);
  const arch_spec qwen2 = test::make_spec("qwen2", "Qwen2ForCausalLM", 32, 40, 2, 4, 2, 0);
  struct refusal {
    std::string json, key;
  };
  const std::vector<refusal> cases = {
      {with_keys(llama(), config_style::v4, "\"partial_rotary_factor\": 0.5"), "partial_rotary_factor"},
      {replaced(test::spec_config_json(llama(), config_style::v5), "\"rope_type\": \"default\"",
                "\"rope_type\": \"default\", \"partial_rotary_factor\": 0.25"),
       "partial_rotary_factor"},
      {replaced(test::spec_config_json(llama(), config_style::v5), "\"rope_type\": \"default\"",
                "\"rope_type\": \"dynamic\", \"factor\": 2.0"),
       "rope_type"},
      {replaced(test::spec_config_json(llama(), config_style::v4), "\"rope_scaling\": null",
                "\"rope_scaling\": {\"rope_type\": \"longrope\", \"short_factor\": [1], \"long_factor\": [1]}"),
       "rope_type"},
      {replaced(test::spec_config_json(qwen3(), config_style::v5), "\"rope_type\": \"default\"",
                "\"rope_type\": \"default\", \"mrope_section\": [2, 2, 4]"),
       "mrope_section"},
      {with_keys(qwen3(), config_style::v5, "\"attn_logit_softcapping\": 50.0"), "attn_logit_softcapping"},
      {with_keys(llama(), config_style::v5, "\"final_logit_softcapping\": 30.0"), "final_logit_softcapping"},
      {replaced(test::spec_config_json(llama(), config_style::v4), "\"hidden_act\": \"silu\"",
                "\"hidden_act\": \"gelu\""),
       "hidden_act"},
      {with_keys(llama(), config_style::v4, "\"mlp_bias\": true"), "mlp_bias"},
      {with_keys(mistral, config_style::v4, "\"attention_bias\": true"), "attention_bias"},
      {with_keys(qwen2, config_style::v5, "\"attention_bias\": true"), "attention_bias"},
      {with_keys(llama(), config_style::v4, "\"sliding_window\": 4"), "sliding_window"},
      {with_keys(qwen3(), config_style::v4,
                 "\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 4}"),
       "quantization_config"},
      {with_keys(qwen2, config_style::v4, "\"shared_expert_intermediate_size\": 64"), "shared_expert_intermediate_size"},
      {replaced(test::spec_config_json(qwen3(), config_style::v5), "\"layer_types\": [\"full_attention\"",
                "\"layer_types\": [\"chunked_attention\""),
       "layer_types"},
  };
  for (const refusal& r : cases) {
    SCOPED_TRACE(r.json);
    auto p = hf::config_parse(r.json);
    ASSERT_FALSE(p.has_value()) << "accepted a config with " << r.key;
    EXPECT_NE(p.error().find("'" + r.key + "'"), std::string::npos) << p.error();
  }
}

TEST(hf_config, defaults_and_spellings_of_both_versions) {
  // head_dim absent: Qwen3's class default is 128, Llama's hidden_size / heads.
  std::string q = replaced(test::spec_config_json(qwen3(), config_style::v5), ", \"head_dim\": 16", "");
  auto pq = hf::config_parse(q);
  ASSERT_TRUE(pq.has_value()) << pq.error();
  EXPECT_EQ(pq->config.head_size(), 128);
  auto pl = hf::config_parse(test::spec_config_json(llama(), config_style::v5));
  ASSERT_TRUE(pl.has_value()) << pl.error();
  EXPECT_EQ(pl->config.head_size(), 8);
  EXPECT_TRUE(pl->notes.empty()) << pl->notes.front();  // every key of a 5.x config is known

  // tie_word_embeddings absent: untied, the class default of the Llama family.
  auto untied = hf::config_parse(replaced(test::spec_config_json(llama()), "\"tie_word_embeddings\": false, ", ""));
  ASSERT_TRUE(untied.has_value()) << untied.error();
  EXPECT_FALSE(untied->config.shared_classifier);

  // 5.x rope_parameters: its own rope_theta wins over a top-level one; llama3 scaling read from it.
  arch_spec l3 = llama();
  l3.theta = 500000.0;
  l3.llama3_scaling = true;
  auto p5 = hf::config_parse(with_keys(l3, config_style::v5, "\"rope_theta\": 10000.0"));
  ASSERT_TRUE(p5.has_value()) << p5.error();
  EXPECT_EQ(p5->config.rope_theta, 500000.0f);
  EXPECT_EQ(p5->config.rope_scaling.type, rope_scaling_config::kind::llama3);
  EXPECT_EQ(p5->config.rope_scaling.original_max_position, l3.original_max_pos);

  // Per-layer-type rope_parameters: the same RoPE for every type loads, different ones are refused.
  arch_spec qs = qwen3();
  qs.sliding_window = 4, qs.max_window_layers = 1;
  const std::string per_type_same =
      "\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"default\", \"rope_theta\": 1000000.0}, "
      "\"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": 1000000.0}}";
  const std::string v5 = test::spec_config_json(qs, config_style::v5);
  const auto rope_at = v5.find("\"rope_parameters\""), rope_end = v5.find('}', rope_at) + 1;
  auto same = hf::config_parse(v5.substr(0, rope_at) + per_type_same + v5.substr(rope_end));
  ASSERT_TRUE(same.has_value()) << same.error();
  EXPECT_EQ(same->config.rope_theta, 1000000.0f);
  EXPECT_EQ(same->config.attention_window(1), 4);
  auto differ = hf::config_parse(v5.substr(0, rope_at) + replaced(per_type_same, "1000000.0}}", "10000.0}}") +
                                 v5.substr(rope_end));
  ASSERT_FALSE(differ.has_value());
  EXPECT_NE(differ.error().find("'rope_parameters'"), std::string::npos) << differ.error();

  // MoE expert count under either name; both names must agree.
  arch_spec moe = test::make_spec("moe", "Qwen3MoeForCausalLM", 32, 36, 2, 2, 1, 16);
  moe.experts = 4, moe.top_k = 2, moe.moe_hidden = 8;
  auto n4 = hf::config_parse(test::spec_config_json(moe, config_style::v4));
  auto n5 = hf::config_parse(test::spec_config_json(moe, config_style::v5));
  ASSERT_TRUE(n4 && n5);
  EXPECT_EQ(n4->config.n_experts, 4);
  EXPECT_EQ(n5->config.n_experts, 4);
  auto both = hf::config_parse(with_keys(moe, config_style::v5, "\"num_experts\": 8"));
  ASSERT_FALSE(both.has_value());
  EXPECT_NE(both.error().find("num_local_experts"), std::string::npos) << both.error();

  // An unknown key is loaded past, and said.
  auto unknown = hf::config_parse(with_keys(llama(), config_style::v5, "\"some_new_flag\": true"));
  ASSERT_TRUE(unknown.has_value());
  ASSERT_EQ(unknown->notes.size(), 1u);
  EXPECT_NE(unknown->notes[0].find("'some_new_flag'"), std::string::npos);
}

// A tensor the config does not account for (biases of attention_bias = false, a layer too many)
// means config and weights describe different models: refused, naming the tensor.
TEST(hf_config, tensors_the_config_does_not_describe_are_refused) {
  arch_spec with_bias = llama();
  with_bias.attention_bias = true;
  auto tensors = test::spec_random_tensors(with_bias, dtype::f32, 3);
  const auto dir = test::temp_dir("extra_tensor");
  test::write_spec_folder(dir, llama(), tensors, dtype::f32);  // config without attention_bias
  auto m = hf_model_load(dir);
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().find("self_attn.") , std::string::npos) << m.error();
  EXPECT_NE(m.error().find("_proj.bias'"), std::string::npos) << m.error();

  // A tied copy of the embedding as lm_head.weight is fine.
  arch_spec tied = llama();
  tied.tied = true;
  auto t = test::spec_random_tensors(tied, dtype::f32, 4);
  t["lm_head.weight"] = t.at("model.embed_tokens.weight");
  test::write_spec_folder(dir, tied, t, dtype::f32);
  auto ok = hf_model_load(dir);
  EXPECT_TRUE(ok.has_value()) << ok.error();
  std::filesystem::remove_all(dir);
}


// GPT-2's config.json as 4.x and 5.x save it (GPT2Config's keys; 5.x: dtype, tie_word_embeddings and
// add_cross_attention written out): the same model, every key known.
TEST(hf_config, gpt2_configs_of_both_versions_read_alike) {
  const std::string common =
      R"("activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
         "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
         "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 64, "n_head": 4,
         "n_inner": null, "n_layer": 2, "n_positions": 1024, "reorder_and_upcast_attn": false, "resid_pdrop": 0.1,
         "scale_attn_by_inverse_layer_idx": false, "scale_attn_weights": true, "summary_activation": null,
         "summary_first_dropout": 0.1, "summary_proj_to_labels": true, "summary_type": "cls_index",
         "summary_use_proj": true, "use_cache": true, "vocab_size": 50257)";
  auto v4 = hf::config_parse("{" + common + R"(, "torch_dtype": "float32", "transformers_version": "4.51.3"})");
  auto v5 = hf::config_parse("{" + common + R"(, "dtype": "float32", "tie_word_embeddings": true,
      "add_cross_attention": false, "transformers_version": "5.0.0"})");
  ASSERT_TRUE(v4.has_value()) << v4.error();
  ASSERT_TRUE(v5.has_value()) << v5.error();
  for (const auto* p : {&*v4, &*v5}) {
    EXPECT_TRUE(p->notes.empty()) << p->notes.front();
    EXPECT_EQ(p->config.dim, 64);
    EXPECT_EQ(p->config.hidden_dim, 256);
    EXPECT_EQ(p->config.seq_len, 1024);
    EXPECT_TRUE(p->config.shared_classifier);
    EXPECT_EQ(p->config.norm, norm_kind::layer);
    EXPECT_EQ(p->config.positions, position_kind::learned);
  }
  auto refused = hf::config_parse("{" + common + R"(, "add_cross_attention": true})");
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().find("'add_cross_attention'"), std::string::npos) << refused.error();
}

}  // namespace
}  // namespace pagedserve
