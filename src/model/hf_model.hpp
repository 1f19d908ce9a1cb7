#pragma once
// Hugging Face model folders: config.json + *.safetensors (one file, or shards listed by
// model.safetensors.index.json) + optional generation_config.json. Supported architectures:
// LlamaForCausalLM (Llama 2/3, TinyLlama; rope_scaling linear/llama3), MistralForCausalLM,
// Qwen2ForCausalLM (QKV bias), Qwen3ForCausalLM (per-head q/k norm), Qwen3MoeForCausalLM.
// Weights stay in the file mapping in their stored dtype (f32, bf16, f16) unless the options ask
// for a conversion; norms and biases are copied to fp32.
#include <cstdint>
#include <expected>
#include <filesystem>
#include <memory>
#include <string>

#include "pagedserve/model.hpp"

namespace pagedserve {

// Errors name the file and the missing/misshapen tensor or config field.
std::expected<std::shared_ptr<const model>, std::string> hf_model_load(const std::filesystem::path& dir,
                                                                       const model_load_options& options = {});

// config.json text describing c (its `architecture` must be one of the supported names; torch_dtype
// from `stored`): what the converter and random-model writer put beside the weights.
std::string hf_config_json(const model_config& c, dtype stored = dtype::f32);

struct hf_write_options {
  dtype type = dtype::f32;  // stored dtype of the matrices (norms are always written as f32)
};

// `pagedserve convert`: writes a llama2.c checkpoint as a genuine HF Llama folder (config.json,
// generation_config.json, model.safetensors). Wq/Wk rows are permuted from llama2.c's interleaved
// RoPE pairs to HF's rotate-half order (the inverse of transformers' convert_llama_weights_to_hf
// permute), so the folder loads in transformers and in hf_model_load with the same logits.
std::expected<void, std::string> hf_folder_write_from_llama2c(const std::filesystem::path& checkpoint,
                                                              const std::filesystem::path& out_dir,
                                                              const hf_write_options& options = {});

// A random-weight folder of c's architecture and shape (benchmarks, load tests): N(0, 0.02)-like
// matrices, unit norms, zero biases. Tensors stream to disk one at a time.
std::expected<void, std::string> hf_folder_write_random(const std::filesystem::path& dir, const model_config& c,
                                                        dtype type, std::uint64_t seed);

}  // namespace pagedserve
