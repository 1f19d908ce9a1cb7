#pragma once
// Small random-weight Hugging Face models written by the tests themselves: an architecture spec,
// its config.json (hand-written here, independent of the library's writer), its tensors by their
// transformers names, and the folder on disk.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "pagedserve/safetensors.hpp"
#include "pagedserve/weight.hpp"

namespace pagedserve::test {

struct arch_spec {
  std::string name;          // test label
  std::string architecture;  // config.json architectures[0]
  int dim = 32, hidden = 40, layers = 2, heads = 4, kv_heads = 2, head_dim = 0, vocab = 97, max_pos = 256;
  double theta = 10000.0, eps = 1e-6;
  bool tied = false;
  bool attention_bias = false;  // Llama/Qwen3: q/k/v/o biases
  bool qkv_bias = false;        // Qwen2: q/k/v biases, always
  bool qk_norm = false;         // Qwen3: per-head q_norm/k_norm
  bool llama3_scaling = false;  // rope_scaling llama3 with the factors below
  bool yarn_scaling = false;    // rope_scaling yarn with factor and original_max_pos (and attention_factor if > 0)
  double yarn_attention_factor = 0;
  double factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0;
  int original_max_pos = 32;
  int experts = 0, top_k = 0, moe_hidden = 0, sparse_step = 1;
  bool norm_topk = false;
  std::vector<int> mlp_only_layers;
  // Sliding-window attention: Mistral's sliding_window, or Qwen's with use_sliding_window from
  // layer max_window_layers on. 0 = none.
  int sliding_window = 0, max_window_layers = 0;

  int window(int layer) const {
    const bool qwen = architecture.rfind("Qwen", 0) == 0;
    return !qwen || layer >= max_window_layers ? sliding_window : 0;
  }

  int hd() const { return head_dim > 0 ? head_dim : dim / heads; }
  bool moe_layer(int l) const {
    for (int d : mlp_only_layers)
      if (d == l) return false;
    return experts > 0 && (l + 1) % sparse_step == 0;
  }
};

inline arch_spec make_spec(std::string name, std::string architecture, int dim, int hidden, int layers, int heads,
                           int kv_heads, int head_dim = 0) {
  arch_spec s;
  s.name = std::move(name);
  s.architecture = std::move(architecture);
  s.dim = dim, s.hidden = hidden, s.layers = layers, s.heads = heads, s.kv_heads = kv_heads, s.head_dim = head_dim;
  return s;
}

struct test_tensor {
  std::vector<std::int64_t> shape;
  std::vector<float> values;  // exactly representable in the folder's dtype
};

using tensor_map = std::map<std::string, test_tensor>;

inline std::string spec_config_json(const arch_spec& s) {
  std::string j = "{\"architectures\": [\"" + s.architecture + "\"], \"hidden_size\": " + std::to_string(s.dim) +
                  ", \"intermediate_size\": " + std::to_string(s.hidden) +
                  ", \"num_hidden_layers\": " + std::to_string(s.layers) +
                  ", \"num_attention_heads\": " + std::to_string(s.heads) +
                  ", \"num_key_value_heads\": " + std::to_string(s.kv_heads) +
                  ", \"vocab_size\": " + std::to_string(s.vocab) +
                  ", \"max_position_embeddings\": " + std::to_string(s.max_pos) +
                  ", \"rms_norm_eps\": " + std::to_string(s.eps) + ", \"rope_theta\": " + std::to_string(s.theta) +
                  ", \"tie_word_embeddings\": " + (s.tied ? "true" : "false") + ", \"hidden_act\": \"silu\"" +
                  ", \"attention_bias\": " + (s.attention_bias ? "true" : "false") +
                  ", \"bos_token_id\": 1, \"eos_token_id\": [2, 3], \"torch_dtype\": \"bfloat16\"";
  if (s.head_dim > 0) j += ", \"head_dim\": " + std::to_string(s.head_dim);
  if (s.llama3_scaling)
    j += ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": " + std::to_string(s.factor) +
         ", \"low_freq_factor\": " + std::to_string(s.low_freq_factor) +
         ", \"high_freq_factor\": " + std::to_string(s.high_freq_factor) +
         ", \"original_max_position_embeddings\": " + std::to_string(s.original_max_pos) + "}";
  else if (s.yarn_scaling)
    j += ", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": " + std::to_string(s.factor) +
         ", \"original_max_position_embeddings\": " + std::to_string(s.original_max_pos) +
         (s.yarn_attention_factor > 0 ? ", \"attention_factor\": " + std::to_string(s.yarn_attention_factor) : "") + "}";
  else
    j += ", \"rope_scaling\": null";
  if (s.experts > 0) {
    j += ", \"num_experts\": " + std::to_string(s.experts) + ", \"num_experts_per_tok\": " + std::to_string(s.top_k) +
         ", \"moe_intermediate_size\": " + std::to_string(s.moe_hidden) +
         ", \"norm_topk_prob\": " + (s.norm_topk ? "true" : "false") +
         ", \"decoder_sparse_step\": " + std::to_string(s.sparse_step) + ", \"mlp_only_layers\": [";
    for (std::size_t i = 0; i < s.mlp_only_layers.size(); ++i) j += (i ? "," : "") + std::to_string(s.mlp_only_layers[i]);
    j += "]";
  }
  if (s.architecture == "MistralForCausalLM")
    j += ", \"sliding_window\": " + (s.sliding_window > 0 ? std::to_string(s.sliding_window) : std::string("null"));
  else if (s.sliding_window > 0)
    j += ", \"use_sliding_window\": true, \"sliding_window\": " + std::to_string(s.sliding_window) +
         ", \"max_window_layers\": " + std::to_string(s.max_window_layers);
  return j + "}";
}

// Random weights for every tensor the architecture defines, rounded to `type`'s values.
inline tensor_map spec_random_tensors(const arch_spec& s, dtype type, std::uint32_t seed) {
  std::mt19937 rng(seed);
  tensor_map m;
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::size_t n = 1;
    for (auto d : shape) n *= static_cast<std::size_t>(d);
    test_tensor t{std::move(shape), std::vector<float>(n)};
    for (float& v : t.values) {
      v = dist(rng);
      if (type == dtype::bf16) v = bf16_to_f32(f32_to_bf16(v));
      if (type == dtype::f16) v = f16_to_f32(f32_to_f16(v));
    }
    m[name] = std::move(t);
  };
  auto linear = [&](const std::string& name, int out, int in) {
    const float a = 1.5f / std::sqrt(static_cast<float>(in));
    add(name, {out, in}, -a, a);
  };
  const int qd = s.heads * s.hd(), kvd = s.kv_heads * s.hd();
  add("model.embed_tokens.weight", {s.vocab, s.dim}, -1.0f, 1.0f);
  for (int l = 0; l < s.layers; ++l) {
    const std::string at = "model.layers." + std::to_string(l) + ".";
    add(at + "input_layernorm.weight", {s.dim}, 0.8f, 1.2f);
    linear(at + "self_attn.q_proj.weight", qd, s.dim);
    linear(at + "self_attn.k_proj.weight", kvd, s.dim);
    linear(at + "self_attn.v_proj.weight", kvd, s.dim);
    linear(at + "self_attn.o_proj.weight", s.dim, qd);
    if (s.qkv_bias || s.attention_bias) {
      add(at + "self_attn.q_proj.bias", {qd}, -0.3f, 0.3f);
      add(at + "self_attn.k_proj.bias", {kvd}, -0.3f, 0.3f);
      add(at + "self_attn.v_proj.bias", {kvd}, -0.3f, 0.3f);
    }
    if (s.attention_bias) add(at + "self_attn.o_proj.bias", {s.dim}, -0.3f, 0.3f);
    if (s.qk_norm) {
      add(at + "self_attn.q_norm.weight", {s.hd()}, 0.5f, 1.5f);
      add(at + "self_attn.k_norm.weight", {s.hd()}, 0.5f, 1.5f);
    }
    add(at + "post_attention_layernorm.weight", {s.dim}, 0.8f, 1.2f);
    if (s.moe_layer(l)) {
      const float a = 6.0f / std::sqrt(static_cast<float>(s.dim));  // a wide router: well-separated top-k
      add(at + "mlp.gate.weight", {s.experts, s.dim}, -a, a);
      for (int e = 0; e < s.experts; ++e) {
        const std::string ex = at + "mlp.experts." + std::to_string(e) + ".";
        linear(ex + "gate_proj.weight", s.moe_hidden, s.dim);
        linear(ex + "up_proj.weight", s.moe_hidden, s.dim);
        linear(ex + "down_proj.weight", s.dim, s.moe_hidden);
      }
    } else {
      linear(at + "mlp.gate_proj.weight", s.hidden, s.dim);
      linear(at + "mlp.up_proj.weight", s.hidden, s.dim);
      linear(at + "mlp.down_proj.weight", s.dim, s.hidden);
    }
  }
  add("model.norm.weight", {s.dim}, 0.8f, 1.2f);
  if (!s.tied) linear("lm_head.weight", s.vocab, s.dim);
  return m;
}

// Writes config.json and the tensors; `shards` > 1 splits them across files with an index.
inline void write_spec_folder(const std::filesystem::path& dir, const arch_spec& s, const tensor_map& tensors,
                              dtype type, int shards = 1) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << spec_config_json(s);
  std::ofstream(dir / "generation_config.json") << "{\"eos_token_id\": [2, 7], \"temperature\": 0.6, \"top_k\": 20}";
  std::vector<std::vector<safetensors_entry>> files(shards);
  std::string index = "{\"metadata\": {}, \"weight_map\": {";
  int i = 0;
  for (const auto& [name, t] : tensors) {
    const int shard = i++ % shards;
    files[shard].push_back(safetensors_entry_from_f32(name, t.shape, t.values.data(), type));
    index += (i > 1 ? ", \"" : "\"") + name + "\": \"model-0000" + std::to_string(shard + 1) + "-of-0000" +
             std::to_string(shards) + ".safetensors\"";
  }
  if (shards == 1) {
    auto r = safetensors_write(dir / "model.safetensors", files[0]);
    if (!r) throw std::runtime_error(r.error());
    return;
  }
  for (int k = 0; k < shards; ++k) {
    auto r = safetensors_write(dir / ("model-0000" + std::to_string(k + 1) + "-of-0000" + std::to_string(shards) +
                                      ".safetensors"),
                               files[k]);
    if (!r) throw std::runtime_error(r.error());
  }
  std::ofstream(dir / "model.safetensors.index.json") << index << "}}";
}

inline std::filesystem::path temp_dir(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("pagedserve_hf_" + std::to_string(::getpid()) + "_" + name);
}

}  // namespace pagedserve::test
