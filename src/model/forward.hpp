#pragma once
// One forward pass of the Llama family (Llama 2/3, Mistral, Qwen2, Qwen3, Qwen3-MoE: what differs is
// optional in the model struct) and GPT-2 (model_config's norm, ffn and positions choose LayerNorm, the
// GELU MLP and learned positions) over a flat, variable-length batch of tokens from many sequences
// (decode tokens and prefill chunks mixed), reading and writing K/V through block tables.
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "pagedserve/ids.hpp"
#include "pagedserve/kernels.hpp"
#include "kv/kv_cache.hpp"
#include "pagedserve/model.hpp"
#include "model/moe.hpp"
#include "pagedserve/step_batch.hpp"

namespace pagedserve {

// Wall time of a forward pass's phases, summed over the steps run while attached (set_phase_times):
// the benchmarks' split of a token. Each phase ends where the next starts, so they add up to the step.
struct forward_phase_times {
  enum phase : int {
    embed,       // token rows, RoPE angles
    qkv,         // the q/k/v matmul group (its activation quantization and join included)
    qkv_post,    // biases, q/k norms, RoPE, K/V store
    attention,   // paged attention
    wo,          // output projection
    norms,       // residual adds fused with norms
    ffn_up,      // gate/up group (or GELU's up), activation
    ffn_down,    // down projection
    classifier,  // final norm and the classifier
    n_phases
  };
  static constexpr const char* names[n_phases] = {"embed", "qkv", "qkv_post", "attention", "wo",
                                                   "norms", "ffn_up", "ffn_down", "classifier"};
  std::array<std::chrono::nanoseconds, n_phases> total{};
  long steps = 0;
};

// Scratch buffers for one forward pass, sized once for the largest step, so forward() allocates nothing.
class forward_pass {
 public:
  forward_pass(const model& m, const kernels::kernel_table& kt, int max_tokens_per_step);

  // logits: [batch.logits_rows.size(), vocab] written in logits_rows order. Returns a view into scratch
  // memory valid until the next call.
  float* run(const step_batch& batch, const kv_cache& cache);

  int max_tokens_per_step() const { return max_tokens_; }

  // Steps add their phases' wall times to *times from now on (nullptr: not timed, the default).
  void set_phase_times(forward_phase_times* times) { phase_times_ = times; }

 private:
  const model& model_;
  const kernels::kernel_table& kt_;
  int max_tokens_;
  // Activations, [max_tokens, width] each: dim for x_, xb_, xb2_; q_dim for q_, att_; kv_dim for k_, v_;
  // hidden_dim for hb_, hb2_ (SwiGLU's up; the GELU MLP needs hb_ only).
  std::vector<float> x_, xb_, xb2_, q_, k_, v_, att_, hb_, hb2_;
  // [max_tokens, vocab], left uninitialised: a step writes only the rows it asks for (one per sequence
  // when decoding), so the rest of its pages never become resident (a 512-token buffer is 64 MiB for a
  // 32k vocabulary, 297 MiB for Qwen3's 152k).
  std::unique_ptr<float[]> logits_;
  std::vector<float> rope_cos_, rope_sin_;  // [max_tokens, head_size/2] this step's rotations
  std::optional<moe_block> moe_;            // MoE models only
  forward_phase_times* phase_times_ = nullptr;
};

}  // namespace pagedserve
