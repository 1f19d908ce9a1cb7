#pragma once
// config.json and generation_config.json of a Hugging Face folder, read into model_config plus the
// per-architecture facts the loader needs to know which tensors to expect.
#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "model/hf_config_keys.hpp"
#include "pagedserve/model.hpp"

namespace pagedserve::hf {

struct parsed_config {
  model_config config;
  family arch = family::llama;
  bool qkv_bias = false;        // q/k/v projections carry biases (Qwen2; attention_bias elsewhere)
  bool o_bias = false;          // o_proj carries a bias (attention_bias on Llama/Qwen3)
  bool qk_norm = false;         // per-head q_norm / k_norm (Qwen3, Qwen3-MoE)
  std::vector<char> moe_layer;  // [n_layers] 1 where the layer's MLP is the sparse MoE block
  generation_defaults generation;  // bos/eos ids config.json carries
  std::vector<std::string> notes;  // worth a log line: keys no table knows (hf_config_keys.hpp)
};

// Reads config.json as transformers 4.x or 5.x writes it. Every problem is an error naming the key:
// missing required keys, wrong types, unknown architectures, and every key of hf_config_keys.hpp's
// refused_keys whose value changes the arithmetic in a way the forward pass does not implement
// (an unknown rope_type, partial_rotary_factor != 1, soft-capping, hidden_act other than silu, ...).
std::expected<parsed_config, std::string> config_parse(std::string_view json);

// Overlays generation_config.json onto `into` (eos/bos ids and the sampling defaults it sets).
std::expected<void, std::string> generation_config_parse(std::string_view json, generation_defaults& into);

}  // namespace pagedserve::hf
