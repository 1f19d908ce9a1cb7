#pragma once
// The mixture-of-experts feed-forward block (Qwen3-MoE, Qwen2-MoE, Mixtral) over one step's tokens:
// router softmax, top-k experts per token, optional renormalisation, then the step's tokens grouped
// per expert so each chosen expert runs its SwiGLU once over all of its tokens (its weights read once
// per step, for decode and prefill alike), and the weighted outputs summed back per token; then
// Qwen2-MoE's shared expert over every token, scaled by sigmoid(gate x), added to that sum.
//
// Batch invariance: a token's router row, its top-k choice and each expert's output row are
// computed by batch-invariant kernels on that token's row alone, and the k weighted outputs are
// summed in the token's own top-k order, so a token's result never depends on who shares the step.
#include <cstdint>
#include <vector>

#include "pagedserve/kernels.hpp"
#include "pagedserve/model.hpp"

namespace pagedserve {

class moe_block {
 public:
  // Buffers for up to max_tokens tokens; nothing is allocated per step after this.
  moe_block(const model_config& c, int max_tokens);

  // out[n_tokens, dim] = sum over the token's top-k experts e of p_e * expert_e(x[t])
  //                      (+ sigmoid(shared_gate x[t]) * shared_expert(x[t])).
  // x: [n_tokens, dim] (the normalised residual). Layer l must be a MoE layer.
  void run(const kernels::kernel_table& kt, float* out, const float* x, const layer_weights& l, int n_tokens);

 private:
  // out[t] += sigmoid(shared_expert_gate x[t]) * shared_expert(x[t]), after the routed experts' sum (HF's order).
  void add_shared_expert(const kernels::kernel_table& kt, float* out, const float* x, const layer_weights& l, int n_tokens);

  int dim_, n_experts_, top_k_, expert_hidden_, shared_hidden_;
  bool norm_topk_;
  std::vector<float> router_probs_;        // [max_tokens, n_experts] logits, then softmax in place
  std::vector<std::int32_t> chosen_;       // [max_tokens, top_k] expert ids, best first
  std::vector<float> chosen_weight_;       // [max_tokens, top_k] their mixing weights
  std::vector<std::int32_t> expert_begin_; // [n_experts + 1] each expert's first grouped row
  std::vector<std::int32_t> expert_fill_;  // [n_experts] rows placed so far while grouping
  std::vector<std::int32_t> active_;       // [n_experts] experts with at least one token this step
  std::vector<std::int32_t> group_token_;  // [max_tokens * top_k] token of each grouped row
  std::vector<std::int32_t> slot_row_;     // [max_tokens * top_k] grouped row of (token, slot)
  std::vector<float> xg_;                  // [max_tokens * top_k, dim] gathered expert inputs
  std::vector<float> gate_, up_;           // [max_tokens * top_k, expert_hidden]
  std::vector<float> yg_;                  // [max_tokens * top_k, dim] expert outputs, grouped
  std::vector<float> shared_gate_, shared_up_;  // [max_tokens, shared_hidden] the shared expert's
  std::vector<float> shared_out_;          // [max_tokens, dim] its output
  std::vector<float> shared_logit_;        // [max_tokens] its gate's logit per token
};

}  // namespace pagedserve
