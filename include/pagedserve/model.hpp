#pragma once
// A loaded model: its shape and typed read-only views of its weights (mmapped or owned). Every
// loader (llama2.c, Hugging Face safetensors, GGUF) fills the same struct, and
// forward_pass reads only this struct, so a new file format is a new loader, nothing more:
//   1. fill model_config (architecture name, dimensions, rope, MoE fields),
//   2. point each `weight` at the tensor's bytes (f32/bf16/f16; a quantized format dequantizes into
//      a buffer from model::keep, or adds a dtype and a kernel),
//   3. convert norm vectors and biases to fp32 (model::keep), set rope_inv_freq =
//      rope_inv_freq_compute(config), and call model_check() to catch any missing or misshapen tensor.
#include <cstdint>
#include <expected>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pagedserve/kernels.hpp"
#include "pagedserve/weight.hpp"

namespace pagedserve {

// How rope_theta's frequencies are rescaled for long context (HF config.json's rope_scaling).
struct rope_scaling_config {
  enum class kind { none, linear, llama3, yarn };
  kind type = kind::none;
  float factor = 1.0f;            // linear: positions / factor; llama3: low frequencies / factor
  float low_freq_factor = 1.0f;   // llama3: wavelengths above original_max_position / this are scaled
  float high_freq_factor = 4.0f;  // llama3: wavelengths below original_max_position / this are kept
  int original_max_position = 8192;  // llama3, yarn: the pre-extension context, in tokens
  // yarn: dimensions turning fewer than beta_slow times over the original context are interpolated
  // (slowed by factor), more than beta_fast times extrapolated (kept), ramped between; cos and sin
  // are scaled by attention_factor (HF's _compute_yarn_parameters).
  float beta_fast = 32.0f, beta_slow = 1.0f;
  bool truncate = true;
  float attention_factor = 1.0f;  // any kind: scales the rotated queries and keys (1 but for yarn)
};

// Architecture facts that are not shapes. The Llama family is RMSNorm, a gated SiLU MLP and RoPE;
// GPT-2 is LayerNorm with bias, a plain MLP with tanh-approximated GELU and learned positions.
enum class norm_kind { rms, layer };           // RMSNorm, or LayerNorm (mean removed, weight and bias)
enum class ffn_kind { swiglu, gelu_tanh };     // down(silu(gate x) * up x), or down(gelu_tanh(up x + b) + b)
enum class position_kind { rope, learned };    // rotary q/k, or a learned embedding added to the token's

struct model_config {
  std::string architecture = "llama2.c";  // config.json's architectures[0], or "llama2.c"
  int dim = 0;          // residual stream width (hidden_size)
  int hidden_dim = 0;   // dense SwiGLU inner width (intermediate_size)
  int n_layers = 0;
  int n_heads = 0;      // query heads
  int n_kv_heads = 0;   // key/value heads (grouped-query attention when < n_heads)
  int vocab_size = 0;
  int seq_len = 0;      // longest context served, in tokens
  float rope_theta = 10000.0f;
  float rms_norm_eps = 1e-5f;   // the epsilon of every norm, RMSNorm or LayerNorm
  norm_kind norm = norm_kind::rms;
  ffn_kind ffn = ffn_kind::swiglu;
  position_kind positions = position_kind::rope;
  bool shared_classifier = true;  // classifier is the token embedding (tie_word_embeddings)
  int head_dim = 0;     // width of one head; 0 means dim / n_heads (Qwen3 sets it explicitly)
  kernels::rope_style rope = kernels::rope_style::interleaved;
  rope_scaling_config rope_scaling;
  // Mixture of experts (Qwen3-MoE, Qwen2-MoE, Mixtral); 0 experts for dense models.
  int n_experts = 0;          // experts per MoE layer
  int n_experts_used = 0;     // top-k experts per token
  int expert_hidden_dim = 0;  // SwiGLU inner width of one expert (moe_intermediate_size)
  bool norm_topk_prob = false;  // renormalise the top-k router probabilities to sum to 1
  int shared_expert_hidden_dim = 0;  // Qwen2-MoE: width of the expert every token also runs (0: none)
  // Sliding-window attention (Mistral; Qwen2/3 with use_sliding_window): the layers marked in
  // sliding_layers ([n_layers]; empty = none) attend to the last sliding_window positions only.
  int sliding_window = 0;
  std::vector<char> sliding_layers;

  int head_size() const { return head_dim > 0 ? head_dim : (n_heads > 0 ? dim / n_heads : 0); }
  int q_dim() const { return n_heads * head_size(); }
  int kv_dim() const { return n_kv_heads * head_size(); }
  int attention_window(int layer) const {
    return layer < static_cast<int>(sliding_layers.size()) && sliding_layers[layer] ? sliding_window : 0;
  }
};

// One expert's SwiGLU: down(silu(gate x) * up x).
struct expert_weights {
  weight gate;  // [expert_hidden_dim, dim]
  weight up;    // [expert_hidden_dim, dim]
  weight down;  // [dim, expert_hidden_dim]

  std::size_t n_bytes() const { return gate.n_bytes() + up.n_bytes() + down.n_bytes(); }
};

// Weights of one transformer block. Matrices are [out, in] row-major. Optional parts are null/empty.
// rms_att, rms_ffn (and model::rms_final) are the norms' weights, RMSNorm's or LayerNorm's (norm_kind).
struct layer_weights {
  const float* rms_att = nullptr;  // [dim]
  const float* att_norm_bias = nullptr;  // [dim] LayerNorm only (GPT-2's ln_1.bias)
  weight wq;                       // [q_dim, dim]
  weight wk;                       // [kv_dim, dim]
  weight wv;                       // [kv_dim, dim]
  weight wo;                       // [dim, q_dim]
  const float* bq = nullptr;       // [q_dim] (Qwen2, Llama attention_bias)
  const float* bk = nullptr;       // [kv_dim]
  const float* bv = nullptr;       // [kv_dim]
  const float* bo = nullptr;       // [dim] (Llama attention_bias)
  const float* q_norm = nullptr;   // [head_size] RMSNorm over each query head before RoPE (Qwen3)
  const float* k_norm = nullptr;   // [head_size] same for keys
  const float* rms_ffn = nullptr;  // [dim]
  const float* ffn_norm_bias = nullptr;  // [dim] LayerNorm only (GPT-2's ln_2.bias)
  weight w_gate;                   // [hidden_dim, dim] dense SwiGLU layers only (none for gelu_tanh)
  weight w_up;                     // [hidden_dim, dim]
  weight w_down;                   // [dim, hidden_dim]
  const float* b_up = nullptr;     // [hidden_dim] (GPT-2's c_fc.bias)
  const float* b_down = nullptr;   // [dim] (GPT-2's mlp.c_proj.bias)
  weight router;                   // [n_experts, dim] MoE layers only
  std::vector<expert_weights> experts;  // [n_experts] MoE layers only
  expert_weights shared_expert;    // Qwen2-MoE: the expert every token runs beside its top-k
  weight shared_expert_gate;       // [1, dim]: sigmoid(gate x) scales the shared expert's output

  bool is_moe() const { return !experts.empty(); }
  bool has_shared_expert() const { return !shared_expert.gate.empty(); }
  // f(e) for every expert's SwiGLU: the routed ones, then the shared one when there is one.
  template <class F>
  void for_each_expert(F&& f) {
    for (expert_weights& e : experts) f(e);
    if (has_shared_expert()) f(shared_expert);
  }
  template <class F>
  void for_each_expert(F&& f) const {
    for (const expert_weights& e : experts) f(e);
    if (has_shared_expert()) f(shared_expert);
  }
};

// Defaults from generation_config.json (and config.json), for the tokenizer and sampler owners.
struct generation_defaults {
  std::vector<int> eos_token_ids;  // any of them ends a sequence
  std::optional<int> bos_token_id;
  // Sampling defaults for requests that do not set them (vLLM's --generation-config auto).
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<int> top_k;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;
  std::optional<int> max_new_tokens;
};

struct model {
  std::string name;  // shown in /health and responses
  model_config config;
  weight token_embedding;                  // [vocab_size, dim]
  std::vector<layer_weights> layers;
  const float* rms_final = nullptr;        // [dim]
  const float* final_norm_bias = nullptr;  // [dim] LayerNorm only (GPT-2's ln_f.bias)
  weight position_embedding;               // [seq_len, dim] position_kind::learned only (GPT-2's wpe)
  weight classifier;                       // [vocab_size, dim]; == token_embedding when tied
  std::vector<float> rope_inv_freq;        // [head_size/2] rotation speed of each pair, scaling applied;
                                           // empty for learned positions
  generation_defaults generation;

  // What keeps the views above alive: file mappings and buffers the loader filled.
  std::vector<std::shared_ptr<const void>> storage;
  // Bytes of the buffers keep() took (converted matrices, norms): the model's own heap, on top of the
  // mapped files, which stay the page cache's.
  std::uint64_t owned_bytes = 0;

  // Moves v into storage and returns its (stable) data pointer.
  template <class T>
  T* keep(std::vector<T> v) {
    owned_bytes += v.size() * sizeof(T);
    auto owned = std::make_shared<std::vector<T>>(std::move(v));
    T* data = owned->data();
    storage.push_back(std::move(owned));
    return data;
  }
};

// Bytes of every distinct matrix of m (weight::n_bytes; a tied classifier counted once): what the
// weights occupy in memory, mapped or owned, and about what one decode step streams for a dense model.
std::uint64_t model_weight_bytes(const model& m);

// The weight bytes one decode step of n_tokens tokens streams (the embedding rows aside): every attention
// and dense matrix and the classifier, and per MoE layer its router, its shared expert, and
// min(n_tokens * top_k, n_experts) of its experts at their average size (the experts any token may pick).
double model_step_weight_bytes(const model& m, int n_tokens);

// Which dtype matrices have in memory after loading.
enum class weight_format {
  as_stored,  // as the file has them (mmapped, no copy): f32, bf16, f16 or a GGUF's block formats
  f32,        // widened to fp32 at load (twice the memory of bf16, the llama2.c path's numerics)
  bf16,       // f32/f16 rounded to bf16 at load (half the memory and bandwidth of fp32)
  int8,       // per-row symmetric int8 at load (quantize.hpp; a quarter of fp32's bytes), packed for the
              // int8 kernels, which quantize activations per token too. Every matrix, token embedding and
              // classifier included; the MoE router keeps its stored type
  int4,       // 4-bit blocks at load (model_int4_type: ggml's q4_K, about 4.5 bits a weight), the block
              // kernels' path; matrices whose rows are not whole blocks fall back to int8. The router as int8
};

// The block type --quantize int4 stores matrices in. q4_K over q4_0 and q4_1 (measured in
// tests/model/int4_quantize_test.cpp, logits of a random Llama vs fp32, rms error): q4_0 0.076 at 4.5
// bits/weight, q4_1 0.063 at 5.0, q4_K 0.062 at 4.5: q4_1's accuracy at q4_0's size, as its 6-bit scales
// and mins per 32 weights cost a fraction of a bit; its one drawback, rows must be whole 256-weight
// super-blocks, is the int8 fallback's case.
inline constexpr dtype model_int4_type = dtype::q4_k;

// "none" (as stored), "f32", "bf16", "int8", "int4" (config model.quantize, --quantize); nullopt otherwise.
std::optional<weight_format> weight_format_parse(std::string_view name);

class load_progress;  // src/model/load_progress.hpp

struct model_load_options {
  weight_format weights = weight_format::as_stored;
  // Shows the weight conversion as it runs and may cancel the load (throws load_cancelled); null: neither.
  load_progress* progress = nullptr;
};

// rope_theta^(-2i/head_size) for each pair i, in fp32 as run.c and HF compute it, then rope_scaling.
// Empty for learned positions (no RoPE).
std::vector<float> rope_inv_freq_compute(const model_config& c);
// Every tensor the config implies is present with its shape: an error naming the first one that is not.
std::expected<void, std::string> model_check(const model& m);
// Re-stores every matrix in the requested format (owned buffers); norms and biases stay fp32.
// Tied token embedding and classifier stay one shared matrix. The learned position embedding stays as
// stored: it is read one row per token (never streamed by a matmul), and rounding it would only add error.
// Logs what it converted and how long it took; reports each matrix to progress, and stops with
// load_cancelled when its stop is requested.
void model_convert_weights(model& m, weight_format format, load_progress* progress = nullptr);

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
