// The tensor list of a llama (also Mixtral's MoE) / qwen2 / qwen2moe / qwen3 / qwen3moe GGUF, filled with random weights.
#include "model/gguf_random_model.hpp"

#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "pagedserve/check.hpp"
#include "model/ggml_blocks.hpp"

namespace pagedserve {
namespace {

class random_tensors {
 public:
  random_tensors(gguf_writer& w, const model_config& c, const gguf_recipe& r, std::uint64_t seed)
      : w_(w), recipe_(r), shape_(gguf_recipe_model_of(c)), seed_(seed) {}

  // ne fastest first: a [rows, cols] matrix is {cols, rows}.
  void add(const std::string& name, std::vector<std::uint64_t> ne) {
    const dtype t = gguf_recipe_type(recipe_, shape_, name, ne);
    ++n_;
    if (is_block_quantized(t)) {
      w_.add_tensor_random_blocks(name, std::move(ne), t, seed_ * 1000003 + n_);
      return;
    }
    const std::vector<float> values = values_of(name, ne);
    w_.add_tensor(name, std::move(ne), t, values);
  }

  // A stacked expert tensor {cols, rows, n_experts} (its name `stacked`) as n_experts 2-D tensors named
  // name_of(e), with the values add(stacked, ne) would give expert e.
  template <class NameOf>
  void add_per_expert(const std::string& stacked, const std::vector<std::uint64_t>& ne, const NameOf& name_of) {
    const dtype t = gguf_recipe_type(recipe_, shape_, stacked, ne);
    ps_check(!is_block_quantized(t), "gguf_add_random_model: per-expert tensors take a plain recipe");
    ++n_;
    const std::vector<float> values = values_of(stacked, ne);
    const std::size_t slab = ne[0] * ne[1];
    for (std::uint64_t e = 0; e < ne[2]; ++e) {
      const std::vector<float> expert(values.begin() + e * slab, values.begin() + (e + 1) * slab);
      w_.add_tensor(name_of(static_cast<int>(e)), {ne[0], ne[1]}, t, expert);
    }
  }

 private:
  // Matrices, biases and the shared expert's gate vector N(0, 0.02) from the tensor's own seed, norms 1.
  std::vector<float> values_of(const std::string& name, const std::vector<std::uint64_t>& ne) const {
    std::uint64_t n = 1;
    for (const std::uint64_t d : ne) n *= d;
    std::vector<float> values(n, 1.0f);
    if (ne.size() >= 2 || name.ends_with(".bias") || name.ends_with("ffn_gate_inp_shexp.weight")) {
      std::mt19937_64 rng(seed_ * 1000003 + n_);
      std::normal_distribution<float> normal(0.0f, 0.02f);
      for (float& v : values) v = normal(rng);
    }
    return values;
  }

  gguf_writer& w_;
  const gguf_recipe& recipe_;
  gguf_recipe_model shape_;
  std::uint64_t seed_;
  std::uint64_t n_ = 0;
};

void add_metadata(gguf_writer& w, const model_config& c) {
  const std::string a = c.architecture;
  auto u32 = [&](const std::string& key, int v) { w.add_u32(a + "." + key, static_cast<std::uint32_t>(v)); };
  w.add_string("general.architecture", a);
  w.add_string("general.name", "random-" + a);
  u32("context_length", c.seq_len);
  u32("embedding_length", c.dim);
  u32("block_count", c.n_layers);
  u32("attention.head_count", c.n_heads);
  u32("attention.head_count_kv", c.n_kv_heads);
  if (c.head_dim > 0) {
    u32("attention.key_length", c.head_dim);
    u32("attention.value_length", c.head_dim);
  }
  w.add_f32(a + ".rope.freq_base", c.rope_theta);
  w.add_f32(a + ".attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  if (c.n_experts > 0) {
    u32("expert_count", c.n_experts);
    u32("expert_used_count", c.n_experts_used);
  }
  if (c.n_experts > 0 && a == "llama") {  // Mixtral: the experts' width is feed_forward_length
    u32("feed_forward_length", c.expert_hidden_dim);
  } else if (c.n_experts > 0) {
    u32("expert_feed_forward_length", c.expert_hidden_dim);
    w.add_bool(a + ".expert_weights_norm", c.norm_topk_prob);
    if (c.shared_expert_hidden_dim > 0) u32("expert_shared_feed_forward_length", c.shared_expert_hidden_dim);
    if (a == "qwen2moe") u32("feed_forward_length", c.hidden_dim);
  } else {
    u32("feed_forward_length", c.hidden_dim);
  }
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
}

}  // namespace

void gguf_add_random_model(gguf_writer& w, const model_config& c, const gguf_recipe& recipe, std::uint64_t seed,
                           gguf_expert_layout experts) {
  ps_check(c.architecture == "llama" || c.architecture == "qwen2" || c.architecture == "qwen2moe" ||
               c.architecture == "qwen3" || c.architecture == "qwen3moe",
           "gguf_add_random_model: architecture must be llama, qwen2, qwen2moe, qwen3 or qwen3moe");
  ps_check((c.shared_expert_hidden_dim > 0) == (c.architecture == "qwen2moe") && (c.n_experts > 0 || c.architecture != "qwen2moe"),
           "gguf_add_random_model: qwen2moe, and only it, has experts and a shared expert");
  ps_check(c.architecture != "llama" || c.n_experts == 0 || c.norm_topk_prob,
           "gguf_add_random_model: a llama MoE (Mixtral) renormalises its top-k weights");
  add_metadata(w, c);
  random_tensors t(w, c, recipe, seed);
  using u = std::uint64_t;
  const u dim = c.dim, qd = c.q_dim(), kvd = c.kv_dim(), hs = c.head_size();
  t.add("token_embd.weight", {dim, u(c.vocab_size)});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string at = "blk." + std::to_string(l) + ".";
    t.add(at + "attn_norm.weight", {dim});
    t.add(at + "attn_q.weight", {dim, qd});
    t.add(at + "attn_k.weight", {dim, kvd});
    t.add(at + "attn_v.weight", {dim, kvd});
    t.add(at + "attn_output.weight", {qd, dim});
    if (c.architecture == "qwen2" || c.architecture == "qwen2moe") {
      t.add(at + "attn_q.bias", {qd});
      t.add(at + "attn_k.bias", {kvd});
      t.add(at + "attn_v.bias", {kvd});
    } else if (c.architecture != "llama") {
      t.add(at + "attn_q_norm.weight", {hs});
      t.add(at + "attn_k_norm.weight", {hs});
    }
    t.add(at + "ffn_norm.weight", {dim});
    if (c.n_experts == 0) {
      t.add(at + "ffn_gate.weight", {dim, u(c.hidden_dim)});
      t.add(at + "ffn_up.weight", {dim, u(c.hidden_dim)});
      t.add(at + "ffn_down.weight", {u(c.hidden_dim), dim});
      continue;
    }
    const u eh = c.expert_hidden_dim, ne = c.n_experts;
    t.add(at + "ffn_gate_inp.weight", {dim, ne});
    const std::pair<const char*, std::vector<u>> projections[] = {
        {"gate", {dim, eh, ne}}, {"up", {dim, eh, ne}}, {"down", {eh, dim, ne}}};
    for (const auto& [p, shape] : projections) {
      const std::string stacked = at + "ffn_" + p + "_exps.weight";
      if (experts == gguf_expert_layout::stacked) t.add(stacked, shape);
      else t.add_per_expert(stacked, shape, [&](int e) { return at + "ffn_" + p + "." + std::to_string(e) + ".weight"; });
    }
    if (c.shared_expert_hidden_dim > 0) {  // Qwen2-MoE: the shared expert and its [dim] gate
      const u sh = c.shared_expert_hidden_dim;
      t.add(at + "ffn_gate_inp_shexp.weight", {dim});
      t.add(at + "ffn_gate_shexp.weight", {dim, sh});
      t.add(at + "ffn_up_shexp.weight", {dim, sh});
      t.add(at + "ffn_down_shexp.weight", {sh, dim});
    }
  }
  t.add("output_norm.weight", {dim});
  if (!c.shared_classifier) t.add("output.weight", {dim, u(c.vocab_size)});
}

void gguf_add_synthetic_vocab(gguf_writer& w, int vocab_size) {
  ps_check(vocab_size >= 3 + 256, "gguf_add_synthetic_vocab: a vocabulary needs 259 tokens for its byte pieces");
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<std::int32_t> types = {2, 3, 3};  // llama.cpp's: 1 normal, 2 unknown, 3 control, 6 byte
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", b);
    tokens.emplace_back(piece);
    types.push_back(6);
  }
  while (static_cast<int>(tokens.size()) < vocab_size) {
    tokens.push_back("\u2581t" + std::to_string(tokens.size()));
    types.push_back(1);
  }
  std::vector<float> scores(tokens.size());
  for (std::size_t i = 0; i < scores.size(); ++i) scores[i] = -static_cast<float>(i);
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_f32s("tokenizer.ggml.scores", scores);
  w.add_i32s("tokenizer.ggml.token_type", types);
  w.add_bool("tokenizer.ggml.add_bos_token", true);
}

}  // namespace pagedserve
