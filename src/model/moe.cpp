// Mixture-of-experts dispatch: route, group per expert, run each expert once, combine.
#include "model/moe.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace pagedserve {

moe_block::moe_block(const model_config& c, int max_tokens)
    : dim_(c.dim), n_experts_(c.n_experts), top_k_(c.n_experts_used), expert_hidden_(c.expert_hidden_dim),
      shared_hidden_(c.shared_expert_hidden_dim), norm_topk_(c.norm_topk_prob) {
  const std::size_t T = max_tokens, rows = T * top_k_;
  router_probs_.resize(T * n_experts_);
  chosen_.resize(rows);
  chosen_weight_.resize(rows);
  expert_begin_.resize(n_experts_ + 1);
  expert_fill_.resize(n_experts_);
  active_.resize(n_experts_);
  group_token_.resize(rows);
  slot_row_.resize(rows);
  xg_.resize(rows * dim_);
  gate_.resize(rows * expert_hidden_);
  up_.resize(rows * expert_hidden_);
  yg_.resize(rows * dim_);
  if (shared_hidden_ > 0) {
    shared_gate_.resize(T * shared_hidden_);
    shared_up_.resize(T * shared_hidden_);
    shared_out_.resize(T * dim_);
    shared_logit_.resize(T);
  }
}

void moe_block::run(const kernels::kernel_table& kt, float* out, const float* x, const layer_weights& l,
                    int n_tokens) {
  const int E = n_experts_, K = top_k_, dim = dim_, eh = expert_hidden_;

  // 1. Router: softmax over all experts in fp32, keep the k most probable (ties: lower id first),
  //    renormalised to sum 1 when the config asks (norm_topk_prob).
  kernels::ops::matmul(kt, router_probs_.data(), x, l.router, n_tokens);
  tbb::parallel_for(0, n_tokens, [&](int t) {
    float* p = router_probs_.data() + static_cast<std::size_t>(t) * E;
    kernels::reference::softmax(p, E);
    std::int32_t* ids = chosen_.data() + static_cast<std::size_t>(t) * K;
    float* w = chosen_weight_.data() + static_cast<std::size_t>(t) * K;
    for (int k = 0; k < K; ++k) {  // k passes of selection: K is small (<= 8 in practice)
      int best = -1;
      for (int e = 0; e < E; ++e) {
        if (std::find(ids, ids + k, e) != ids + k) continue;
        if (best < 0 || p[e] > p[best]) best = e;
      }
      ids[k] = best;
      w[k] = p[best];
    }
    if (norm_topk_) {
      float sum = 0.0f;
      for (int k = 0; k < K; ++k) sum += w[k];
      for (int k = 0; k < K; ++k) w[k] /= sum;
    }
  });

  // 2. Group the (token, slot) pairs by expert, tokens in step order (a counting sort).
  std::fill(expert_begin_.begin(), expert_begin_.end(), 0);
  const int n_rows = n_tokens * K;
  for (int r = 0; r < n_rows; ++r) ++expert_begin_[chosen_[r] + 1];
  int n_active = 0;
  for (int e = 0; e < E; ++e) {
    if (expert_begin_[e + 1] > 0) active_[n_active++] = e;
    expert_begin_[e + 1] += expert_begin_[e];
  }
  std::copy(expert_begin_.begin(), expert_begin_.end() - 1, expert_fill_.begin());
  for (int r = 0; r < n_rows; ++r) {
    const int row = expert_fill_[chosen_[r]]++;
    slot_row_[r] = row;
    group_token_[row] = r / K;
  }
  tbb::parallel_for(0, n_rows, [&](int row) {
    std::memcpy(&xg_[static_cast<std::size_t>(row) * dim], x + static_cast<std::size_t>(group_token_[row]) * dim,
                dim * sizeof(float));
  });

  // 3. Each active expert once over its group of rows: down(silu(gate x) * up x).
  tbb::parallel_for(0, n_active, [&](int a) {
    const int e = active_[a];
    const int r0 = expert_begin_[e], n = expert_begin_[e + 1] - r0;
    const expert_weights& ew = l.experts[e];
    const float* xe = &xg_[static_cast<std::size_t>(r0) * dim];
    float* ge = &gate_[static_cast<std::size_t>(r0) * eh];
    float* ue = &up_[static_cast<std::size_t>(r0) * eh];
    // Gate and up in one group: block-quantized experts then quantize the group's activations once.
    const kernels::ops::matmul_output gate_up[] = {{ge, ew.gate}, {ue, ew.up}};
    kernels::ops::matmul_group(kt, gate_up, xe, n);
    kernels::ops::swiglu(kt, ge, ue, n, eh);
    kernels::ops::matmul(kt, &yg_[static_cast<std::size_t>(r0) * dim], ge, ew.down, n);
  });

  // 4. out[t] = sum over the token's slots, in its top-k order, of weight * expert output.
  tbb::parallel_for(0, n_tokens, [&](int t) {
    float* ot = out + static_cast<std::size_t>(t) * dim;
    std::fill(ot, ot + dim, 0.0f);
    for (int k = 0; k < K; ++k) {
      const std::size_t r = static_cast<std::size_t>(t) * K + k;
      kt.axpy(ot, chosen_weight_[r], &yg_[static_cast<std::size_t>(slot_row_[r]) * dim], dim);
    }
  });
  if (l.has_shared_expert()) add_shared_expert(kt, out, x, l, n_tokens);
}

void moe_block::add_shared_expert(const kernels::kernel_table& kt, float* out, const float* x, const layer_weights& l,
                                  int n_tokens) {
  const int dim = dim_, sh = shared_hidden_;
  const kernels::ops::matmul_output gate_up[] = {{shared_gate_.data(), l.shared_expert.gate},
                                                 {shared_up_.data(), l.shared_expert.up}};
  kernels::ops::matmul_group(kt, gate_up, x, n_tokens);
  kernels::ops::swiglu(kt, shared_gate_.data(), shared_up_.data(), n_tokens, sh);
  kernels::ops::matmul(kt, shared_out_.data(), shared_gate_.data(), l.shared_expert.down, n_tokens);
  kernels::ops::matmul(kt, shared_logit_.data(), x, l.shared_expert_gate, n_tokens);
  tbb::parallel_for(0, n_tokens, [&](int t) {
    const float g = 1.0f / (1.0f + std::exp(-shared_logit_[t]));
    kt.axpy(out + static_cast<std::size_t>(t) * dim, g, &shared_out_[static_cast<std::size_t>(t) * dim], dim);
  });
}

}  // namespace pagedserve
