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

#include "model/safetensors.hpp"
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
  int shared_hidden = 0;  // Qwen2-MoE: the shared expert's width
  bool norm_topk = false;
  std::vector<int> mlp_only_layers;
  // Sliding-window attention: Mistral's sliding_window, or Qwen's with use_sliding_window from
  // layer max_window_layers on. 0 = none. sliding_layers, when set, marks the sliding layers
  // instead (transformers 5's layer_types; such a spec has no 4.x config).
  int sliding_window = 0, max_window_layers = 0;
  std::vector<int> sliding_layers;

  bool slides(int layer) const {
    if (!sliding_layers.empty()) return sliding_layers[layer] != 0;
    const bool qwen = architecture.rfind("Qwen", 0) == 0;
    return !qwen || layer >= max_window_layers;
  }
  int window(int layer) const { return slides(layer) ? sliding_window : 0; }

  int hd() const { return head_dim > 0 ? head_dim : dim / heads; }
  bool mixtral() const { return architecture == "MixtralForCausalLM"; }
  // Where a MoE layer's router and experts are, and an expert's projections' names: Mixtral's checkpoints
  // (transformers 4.x) keep block_sparse_moe with w1 (gate), w3 (up), w2 (down).
  std::string moe_prefix() const { return mixtral() ? "block_sparse_moe." : "mlp."; }
  std::string expert_gate() const { return mixtral() ? "w1.weight" : "gate_proj.weight"; }
  std::string expert_up() const { return mixtral() ? "w3.weight" : "up_proj.weight"; }
  std::string expert_down() const { return mixtral() ? "w2.weight" : "down_proj.weight"; }
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

// config.json as transformers writes it: 4.x (top-level rope_theta / rope_scaling, torch_dtype,
// num_experts) or 5.x (rope_parameters holding rope_theta and the scaling, dtype, num_local_experts,
// layer_types).
enum class config_style { v4, v5 };

inline std::string spec_config_json(const arch_spec& s, config_style style = config_style::v4) {
  const bool v5 = style == config_style::v5;
  const bool qwen = s.architecture.rfind("Qwen", 0) == 0, qwen2_moe = s.architecture == "Qwen2MoeForCausalLM";
  const bool mistral = s.architecture == "MistralForCausalLM" || s.mixtral();
  auto num = [](double v) { return std::to_string(v); };
  std::string j = "{\"architectures\": [\"" + s.architecture + "\"], \"hidden_size\": " + std::to_string(s.dim) +
                  ", \"intermediate_size\": " + std::to_string(s.hidden) +
                  ", \"num_hidden_layers\": " + std::to_string(s.layers) +
                  ", \"num_attention_heads\": " + std::to_string(s.heads) +
                  ", \"num_key_value_heads\": " + std::to_string(s.kv_heads) +
                  ", \"vocab_size\": " + std::to_string(s.vocab) +
                  ", \"max_position_embeddings\": " + std::to_string(s.max_pos) +
                  ", \"rms_norm_eps\": " + num(s.eps) +
                  ", \"tie_word_embeddings\": " + (s.tied ? "true" : "false") + ", \"hidden_act\": \"silu\"" +
                  ", \"bos_token_id\": 1, \"eos_token_id\": [2, 3], \"initializer_range\": 0.02, \"use_cache\": true" +
                  ", \"attention_dropout\": 0.0, \"transformers_version\": \"" + (v5 ? "5.0.0" : "4.51.3") + "\"" +
                  (v5 ? ", \"dtype\": \"bfloat16\"" : ", \"torch_dtype\": \"bfloat16\"");
  if (s.attention_bias || (!mistral && s.architecture != "Qwen2ForCausalLM" && !qwen2_moe))
    j += std::string(", \"attention_bias\": ") + (s.attention_bias ? "true" : "false");
  if (s.head_dim > 0) j += ", \"head_dim\": " + std::to_string(s.head_dim);
  std::string scaling;  // the rope dict's scaling keys, without braces
  if (s.llama3_scaling)
    scaling = "\"rope_type\": \"llama3\", \"factor\": " + num(s.factor) + ", \"low_freq_factor\": " +
              num(s.low_freq_factor) + ", \"high_freq_factor\": " + num(s.high_freq_factor) +
              ", \"original_max_position_embeddings\": " + std::to_string(s.original_max_pos);
  else if (s.yarn_scaling)
    scaling = "\"rope_type\": \"yarn\", \"factor\": " + num(s.factor) +
              ", \"original_max_position_embeddings\": " + std::to_string(s.original_max_pos) +
              (s.yarn_attention_factor > 0 ? ", \"attention_factor\": " + num(s.yarn_attention_factor) : "");
  if (v5)
    j += ", \"rope_parameters\": {\"rope_theta\": " + num(s.theta) + ", " +
         (scaling.empty() ? "\"rope_type\": \"default\"" : scaling) + "}";
  else
    j += ", \"rope_theta\": " + num(s.theta) + ", \"rope_scaling\": " + (scaling.empty() ? "null" : "{" + scaling + "}");
  if (s.mixtral()) {  // the experts are intermediate_size wide; top-k always renormalised
    j += ", \"num_local_experts\": " + std::to_string(s.experts) + ", \"num_experts_per_tok\": " +
         std::to_string(s.top_k) + ", \"output_router_logits\": false, \"router_aux_loss_coef\": 0.02" +
         ", \"router_jitter_noise\": 0.0";
  } else if (s.experts > 0) {
    j += std::string(v5 && !qwen2_moe ? ", \"num_local_experts\": " : ", \"num_experts\": ") + std::to_string(s.experts) +
         ", \"num_experts_per_tok\": " + std::to_string(s.top_k) +
         ", \"moe_intermediate_size\": " + std::to_string(s.moe_hidden) +
         ", \"norm_topk_prob\": " + (s.norm_topk ? "true" : "false") +
         ", \"decoder_sparse_step\": " + std::to_string(s.sparse_step) + ", \"mlp_only_layers\": [";
    for (std::size_t i = 0; i < s.mlp_only_layers.size(); ++i) j += (i ? "," : "") + std::to_string(s.mlp_only_layers[i]);
    j += "], \"output_router_logits\": false, \"router_aux_loss_coef\": 0.001";
    if (s.shared_hidden > 0) j += ", \"shared_expert_intermediate_size\": " + std::to_string(s.shared_hidden);
    if (qwen2_moe && v5) j += ", \"qkv_bias\": true";
  }
  if (mistral)
    j += ", \"sliding_window\": " + (s.sliding_window > 0 ? std::to_string(s.sliding_window) : std::string("null"));
  else if (qwen)
    j += std::string(", \"use_sliding_window\": ") + (s.sliding_window > 0 ? "true" : "false") +
         ", \"sliding_window\": " + (s.sliding_window > 0 ? std::to_string(s.sliding_window) : std::string("null")) +
         ", \"max_window_layers\": " + std::to_string(s.sliding_window > 0 ? s.max_window_layers : 28);
  if (v5 && (qwen || (mistral && s.sliding_window > 0))) {  // transformers 5 writes each layer's attention type
    j += ", \"layer_types\": [";
    for (int l = 0; l < s.layers; ++l)
      j += std::string(l ? ", " : "") + (s.window(l) > 0 ? "\"sliding_attention\"" : "\"full_attention\"");
    j += "]";
  }
  return j + "}";
}

// m[name] = a tensor of `shape` with values uniform in [lo, hi), rounded to `type`'s values.
inline void add_random_tensor(tensor_map& m, std::mt19937& rng, dtype type, const std::string& name,
                              std::vector<std::int64_t> shape, float lo, float hi) {
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
}

// Random weights for every tensor the architecture defines, rounded to `type`'s values.
inline tensor_map spec_random_tensors(const arch_spec& s, dtype type, std::uint32_t seed) {
  std::mt19937 rng(seed);
  tensor_map m;
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape, float lo, float hi) {
    add_random_tensor(m, rng, type, name, std::move(shape), lo, hi);
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
      add(at + s.moe_prefix() + "gate.weight", {s.experts, s.dim}, -a, a);
      for (int e = 0; e < s.experts; ++e) {
        const std::string ex = at + s.moe_prefix() + "experts." + std::to_string(e) + ".";
        linear(ex + s.expert_gate(), s.moe_hidden, s.dim);
        linear(ex + s.expert_up(), s.moe_hidden, s.dim);
        linear(ex + s.expert_down(), s.dim, s.moe_hidden);
      }
      if (s.shared_hidden > 0) {
        linear(at + "mlp.shared_expert.gate_proj.weight", s.shared_hidden, s.dim);
        linear(at + "mlp.shared_expert.up_proj.weight", s.shared_hidden, s.dim);
        linear(at + "mlp.shared_expert.down_proj.weight", s.dim, s.shared_hidden);
        linear(at + "mlp.shared_expert_gate.weight", 1, s.dim);
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

// The same experts in transformers 5's fused layout: per MoE layer, mlp.experts.gate_up_proj
// [experts, 2 * moe_hidden, dim] (each expert's gate rows, then its up rows) and mlp.experts.down_proj
// [experts, dim, moe_hidden], in place of the per-expert tensors; Mixtral's router moves to mlp.gate.
inline tensor_map fuse_expert_tensors(const arch_spec& s, tensor_map m) {
  for (int l = 0; l < s.layers; ++l) {
    if (!s.moe_layer(l)) continue;
    const std::string layer = "model.layers." + std::to_string(l) + ".";
    const std::string from = layer + s.moe_prefix() + "experts.", at = layer + "mlp.experts.";
    if (s.mixtral()) {
      m[layer + "mlp.gate.weight"] = m.at(layer + "block_sparse_moe.gate.weight");
      m.erase(layer + "block_sparse_moe.gate.weight");
    }
    test_tensor gate_up{{s.experts, 2 * s.moe_hidden, s.dim}, {}}, down{{s.experts, s.dim, s.moe_hidden}, {}};
    for (int e = 0; e < s.experts; ++e) {
      const std::string ex = from + std::to_string(e) + ".";
      for (const std::string& part : {s.expert_gate(), s.expert_up()}) {
        auto& v = m.at(ex + part).values;
        gate_up.values.insert(gate_up.values.end(), v.begin(), v.end());
        m.erase(ex + part);
      }
      auto& v = m.at(ex + s.expert_down()).values;
      down.values.insert(down.values.end(), v.begin(), v.end());
      m.erase(ex + s.expert_down());
    }
    m[at + "gate_up_proj"] = std::move(gate_up);
    m[at + "down_proj"] = std::move(down);
  }
  return m;
}

// Writes config.json and the tensors; `shards` > 1 splits them across files with an index.
inline void write_spec_folder(const std::filesystem::path& dir, const arch_spec& s, const tensor_map& tensors,
                              dtype type, int shards = 1, config_style style = config_style::v4) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << spec_config_json(s, style);
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
