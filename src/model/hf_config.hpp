#pragma once
// config.json and generation_config.json of a Hugging Face folder, read into model_config plus the
// per-architecture facts the loader needs to know which tensors to expect.
#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "pagedserve/model.hpp"

namespace pagedserve::hf {

// The architectures config.json's `architectures` may name, and what each implies.
enum class family { llama, qwen2, qwen3, qwen3_moe, gpt2 };

struct parsed_config {
  model_config config;
  family arch = family::llama;
  bool qkv_bias = false;        // q/k/v projections carry biases (Qwen2; attention_bias elsewhere)
  bool o_bias = false;          // o_proj carries a bias (attention_bias on Llama/Qwen3)
  bool qk_norm = false;         // per-head q_norm / k_norm (Qwen3, Qwen3-MoE)
  std::vector<char> moe_layer;  // [n_layers] 1 where the layer's MLP is the sparse MoE block
  generation_defaults generation;  // bos/eos ids config.json carries
  std::vector<std::string> notes;  // adjustments worth a log line (context clamped to a sliding window)
};

// Every problem is an error naming the field: missing required fields, wrong types, unknown
// architectures, features the forward pass does not implement (hidden_act other than silu, mlp_bias,
// rope_scaling types other than linear/llama3, ...).
std::expected<parsed_config, std::string> config_parse(std::string_view json);

// Overlays generation_config.json onto `into` (eos/bos ids, temperature, top_p, top_k).
std::expected<void, std::string> generation_config_parse(std::string_view json, generation_defaults& into);

}  // namespace pagedserve::hf
