#pragma once
// A loaded model: its shape and read-only pointers to its weights (mmapped or owned).
#include <cstdint>
#include <expected>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "pagedserve/mapped_file.hpp"

namespace pagedserve {

struct model_config {
  int dim = 0;          // residual stream width
  int hidden_dim = 0;   // SwiGLU inner width
  int n_layers = 0;
  int n_heads = 0;      // query heads
  int n_kv_heads = 0;   // key/value heads (grouped-query attention when < n_heads)
  int vocab_size = 0;
  int seq_len = 0;      // longest context the model was trained for, in tokens
  float rope_theta = 10000.0f;
  float rms_norm_eps = 1e-5f;
  bool shared_classifier = true;  // classifier is the token embedding

  int head_size() const { return dim / n_heads; }
  int kv_dim() const { return n_kv_heads * head_size(); }
};

// Weights of one transformer block. Matrices are [out, in] row-major.
struct layer_weights {
  const float* rms_att = nullptr;  // [dim]
  const float* wq = nullptr;       // [n_heads*head_size, dim]
  const float* wk = nullptr;       // [kv_dim, dim]
  const float* wv = nullptr;       // [kv_dim, dim]
  const float* wo = nullptr;       // [dim, n_heads*head_size]
  const float* rms_ffn = nullptr;  // [dim]
  const float* w1 = nullptr;       // [hidden_dim, dim] gate
  const float* w2 = nullptr;       // [dim, hidden_dim] down
  const float* w3 = nullptr;       // [hidden_dim, dim] up
};

struct model {
  std::string name;  // shown in /health and responses
  model_config config;
  const float* token_embedding = nullptr;  // [vocab_size, dim]
  std::vector<layer_weights> layers;
  const float* rms_final = nullptr;        // [dim]
  const float* classifier = nullptr;       // [vocab_size, dim]

  // What keeps the pointers above alive: a file mapping or an owned buffer.
  mapped_file mapping;
  std::vector<float> owned;
};

// llama2.c checkpoint: 7 int32 header (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
// seq_len; a negative vocab_size means a separate classifier follows), then float32 tensors in
// run.c's order. Mapped, not copied. A truncated or inconsistent file is an error naming the problem.
std::expected<std::shared_ptr<const model>, std::string> llama2c_model_load(const std::filesystem::path& path);
// Same, from a buffer of the file's bytes (the built-in default model).
std::expected<std::shared_ptr<const model>, std::string> llama2c_model_from_floats(std::vector<float> file_words,
                                                                                   std::string name);

// Writes a llama2.c checkpoint with N(0, stddev) weights, RMS weights 1 and the legacy freq_cis
// tables, as the generator behind ../shared/anchors/perf.md does. Tests and benchmarks use it.
std::vector<float> llama2c_random_checkpoint(const model_config& config, std::uint64_t seed, float stddev = 0.02f);
std::expected<void, std::string> llama2c_write_random(const std::filesystem::path& path, const model_config& config,
                                                      std::uint64_t seed);

}  // namespace pagedserve
