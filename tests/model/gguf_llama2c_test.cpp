// stories260K (llama2.c) written as a llama-arch GGUF F32 file is the same model. llama2.c keeps
// Meta's interleaved Q/K row layout, which is also what llama.cpp's converter writes for llama-arch
// GGUFs, so the weights go in unpermuted and the GGUF loader must pick interleaved RoPE to match.
#include <gtest/gtest.h>

#include "model/golden_greedy.hpp"
#include "model/hf_test_model.hpp"
#include "model/generator.hpp"
#include "model/gguf_model.hpp"
#include "model/gguf_writer.hpp"
#include "model/model_load.hpp"
#include "tokenizer/tokenizer.hpp"
#include "model/engine_runner.hpp"

namespace pagedserve {
namespace {

std::span<const float> values(const weight& w) { return {w.f32(), w.n_elements()}; }
std::span<const float> values(const float* v, int n) { return {v, static_cast<std::size_t>(n)}; }

void add_matrix(gguf_writer& g, const std::string& name, const weight& w) {
  g.add_tensor(name, {static_cast<std::uint64_t>(w.cols), static_cast<std::uint64_t>(w.rows)}, gguf_tensor_type::f32,
               values(w));
}

void write_llama2c_as_gguf(const model& m, const std::filesystem::path& path) {
  const model_config& c = m.config;
  gguf_writer g;
  g.add_string("general.architecture", "llama");
  g.add_u32("llama.context_length", c.seq_len);
  g.add_u32("llama.embedding_length", c.dim);
  g.add_u32("llama.block_count", c.n_layers);
  g.add_u32("llama.feed_forward_length", c.hidden_dim);
  g.add_u32("llama.attention.head_count", c.n_heads);
  g.add_u32("llama.attention.head_count_kv", c.n_kv_heads);
  g.add_f32("llama.rope.freq_base", c.rope_theta);
  g.add_f32("llama.attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  g.add_u32("tokenizer.ggml.bos_token_id", 1);
  g.add_u32("tokenizer.ggml.eos_token_id", 2);
  // llama2.c stories end with BOS, and run.c stops there: the file's end-of-text token.
  g.add_u32("tokenizer.ggml.eot_token_id", 1);
  add_matrix(g, "token_embd.weight", m.token_embedding);
  for (int l = 0; l < c.n_layers; ++l) {
    const layer_weights& w = m.layers[l];
    const std::string at = "blk." + std::to_string(l) + ".";
    g.add_tensor(at + "attn_norm.weight", {static_cast<std::uint64_t>(c.dim)}, gguf_tensor_type::f32, values(w.rms_att, c.dim));
    add_matrix(g, at + "attn_q.weight", w.wq);
    add_matrix(g, at + "attn_k.weight", w.wk);
    add_matrix(g, at + "attn_v.weight", w.wv);
    add_matrix(g, at + "attn_output.weight", w.wo);
    g.add_tensor(at + "ffn_norm.weight", {static_cast<std::uint64_t>(c.dim)}, gguf_tensor_type::f32, values(w.rms_ffn, c.dim));
    add_matrix(g, at + "ffn_gate.weight", w.w_gate);
    add_matrix(g, at + "ffn_up.weight", w.w_up);
    add_matrix(g, at + "ffn_down.weight", w.w_down);
  }
  g.add_tensor("output_norm.weight", {static_cast<std::uint64_t>(c.dim)}, gguf_tensor_type::f32, values(m.rms_final, c.dim));
  if (!c.shared_classifier) add_matrix(g, "output.weight", m.classifier);
  ASSERT_TRUE(g.write(path).has_value());
}

TEST(gguf_stories260k, same_logits_and_greedy_ids_as_the_llama2c_loader) {
  const auto ckpt = test::model_file("stories260K.bin");
  PAGEDSERVE_REQUIRE_DATA(ckpt);
  auto original = llama2c_model_load(ckpt);
  ASSERT_TRUE(original.has_value()) << original.error();
  const auto path = test::temp_dir("stories260K.gguf");
  write_llama2c_as_gguf(**original, path);
  auto m = model_load_any(path);
  ASSERT_TRUE(m.has_value()) << m.error();
  EXPECT_EQ((*m)->config.rope, kernels::rope_style::interleaved);
  EXPECT_TRUE((*m)->config.shared_classifier);
  EXPECT_EQ((*m)->generation.bos_token_id, 1);

  // Identical weights and RoPE: identical logits, bit for bit.
  const auto& kt = *kernels::kernel_table_select();
  const std::vector<int> a = {1, 403, 407, 261, 378, 6, 9, 30}, b = {1, 68, 300, 33, 1};
  EXPECT_EQ(test::run_engine(**m, kt, a, b), test::run_engine(**original, kt, a, b));

  auto tok = llama2c_tokenizer_load(test::model_file("tok512.bin"), (*m)->config.vocab_size);
  ASSERT_TRUE(tok.has_value()) << tok.error();
  test::expect_golden_greedy_ids(**m, **tok);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pagedserve
