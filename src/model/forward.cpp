// The forward pass over one step's flat token batch, top to bottom. Architecture differences are
// data: optional biases (Qwen2, GPT-2), per-head q/k norms (Qwen3), the RoPE pairing (llama2.c
// interleaved, HF rotate-half) or learned positions (GPT-2), RMSNorm or LayerNorm, a SwiGLU or GELU MLP
// (GPT-2), a separate head width (Qwen3) and MoE layers (Qwen3-MoE).
#include "model/forward.hpp"

#include <algorithm>
#include <cstring>

#include "pagedserve/check.hpp"

namespace pagedserve {

forward_pass::forward_pass(const model& m, const kernels::kernel_table& kt, int max_tokens_per_step)
    : model_(m), kt_(kt), max_tokens_(max_tokens_per_step) {
  const auto& c = m.config;
  const std::size_t T = max_tokens_per_step;
  x_.resize(T * c.dim);
  xb_.resize(T * c.dim);
  xb2_.resize(T * c.dim);
  q_.resize(T * c.q_dim());
  k_.resize(T * c.kv_dim());
  v_.resize(T * c.kv_dim());
  att_.resize(T * c.q_dim());
  const bool any_dense = std::any_of(m.layers.begin(), m.layers.end(), [](const auto& l) { return !l.is_moe(); });
  if (any_dense) hb_.resize(T * c.hidden_dim);
  if (any_dense && c.ffn == ffn_kind::swiglu) hb2_.resize(T * c.hidden_dim);
  logits_.reset(new float[T * static_cast<std::size_t>(c.vocab_size)]);
  if (c.positions == position_kind::rope) {
    rope_cos_.resize(T * (c.head_size() / 2));
    rope_sin_.resize(T * (c.head_size() / 2));
  }
  if (c.n_experts > 0) moe_.emplace(c, max_tokens_per_step);
}

float* forward_pass::run(const step_batch& b, const kv_cache& cache) {
  namespace ops = kernels::ops;
  const model_config& c = model_.config;
  const int T = b.n_tokens();
  ps_check(T > 0 && T <= max_tokens_, "forward: step token count out of range");
  const int dim = c.dim, q_dim = c.q_dim(), kv_dim = c.kv_dim(), hid = c.hidden_dim, hs = c.head_size();
  const float eps = c.rms_norm_eps;
  const bool rope = c.positions == position_kind::rope, layer_norm = c.norm == norm_kind::layer;
  // RMSNorm or LayerNorm (with its bias) of `rows` rows; the add_ form first adds y into the residual x.
  const auto norm = [&](float* out, const float* x, const float* w, const float* bias, int rows) {
    if (layer_norm) ops::layernorm(kt_, out, x, w, bias, rows, dim, eps);
    else ops::rmsnorm(kt_, out, x, w, rows, dim, eps);
  };
  const auto add_norm = [&](float* out, float* x, const float* y, const float* w, const float* bias) {
    if (layer_norm) ops::add_layernorm(kt_, out, x, y, w, bias, T, dim, eps);
    else ops::add_rmsnorm(kt_, out, x, y, w, T, dim, eps);
  };

  // Benchmarks only (set_phase_times): the time since the previous mark goes to phase `p`.
  using phase = forward_phase_times::phase;
  auto mark_at = phase_times_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  const auto mark = [&](phase p) {
    if (!phase_times_) return;
    const auto now = std::chrono::steady_clock::now();
    phase_times_->total[p] += now - mark_at;
    mark_at = now;
  };
  if (phase_times_) ++phase_times_->steps;

  kernels::attention_batch ab;
  ab.seq_of_token = b.seq_of_token.data();
  ab.pos_of_token = b.positions.data();
  ab.block_tables = b.block_tables.data();
  ab.seq_block_offset = b.seq_block_offset.data();
  ab.n_tokens = T;
  ab.max_context = *std::max_element(b.positions.begin(), b.positions.end()) + 1;

  for (int t = 0; t < T; ++t) {
    const token_id id = b.tokens[t];
    ps_check(id >= 0 && id < c.vocab_size, "forward: token id out of vocabulary");
    weight_row_to_f32(&x_[static_cast<std::size_t>(t) * dim], model_.token_embedding, id);
  }
  if (rope) {  // every layer turns its queries and keys by the same per-token angles
    ops::rope_angles(rope_cos_.data(), rope_sin_.data(), b.positions.data(), T, model_.rope_inv_freq.data(), hs / 2,
                     c.rope_scaling.attention_factor);
  } else {  // GPT-2: the position's learned row joins the token's (xb_ is free scratch until the norm)
    for (int t = 0; t < T; ++t) {
      ps_check(b.positions[t] >= 0 && b.positions[t] < c.seq_len, "forward: position beyond the learned embeddings");
      weight_row_to_f32(xb_.data(), model_.position_embedding, b.positions[t]);
      ops::add(&x_[static_cast<std::size_t>(t) * dim], xb_.data(), 1, dim);
    }
  }

  mark(phase::embed);
  // Each residual add is fused with the norm that follows it; the first layer's norm stands alone.
  norm(xb_.data(), x_.data(), model_.layers[0].rms_att, model_.layers[0].att_norm_bias, T);
  mark(phase::norms);
  for (int l = 0; l < c.n_layers; ++l) {
    const layer_weights& w = model_.layers[l];
    // Attention block: xb_ holds the normed input.
    const ops::matmul_output qkv[] = {{q_.data(), w.wq}, {k_.data(), w.wk}, {v_.data(), w.wv}};
    ops::matmul_group(kt_, qkv, xb_.data(), T);
    mark(phase::qkv);
    if (w.bq) ops::add_bias(q_.data(), w.bq, T, q_dim);
    if (w.bk) ops::add_bias(k_.data(), w.bk, T, kv_dim);
    if (w.bv) ops::add_bias(v_.data(), w.bv, T, kv_dim);
    if (w.q_norm) {  // RMSNorm over each head, in place
      ops::rmsnorm(kt_, q_.data(), q_.data(), w.q_norm, T * c.n_heads, hs, eps);
      ops::rmsnorm(kt_, k_.data(), k_.data(), w.k_norm, T * c.n_kv_heads, hs, eps);
    }
    if (rope) {
      ops::rope(q_.data(), rope_cos_.data(), rope_sin_.data(), T, c.n_heads, hs, c.rope);
      ops::rope(k_.data(), rope_cos_.data(), rope_sin_.data(), T, c.n_kv_heads, hs, c.rope);
    }
    for (int t = 0; t < T; ++t)  // this step's keys and values into their paged slots
      cache.store(kt_, l, b.slots[t], &k_[static_cast<std::size_t>(t) * kv_dim], &v_[static_cast<std::size_t>(t) * kv_dim]);
    ab.window = c.attention_window(l);
    mark(phase::qkv_post);
    ops::paged_attention(kt_, att_.data(), q_.data(), cache.layer(l), ab, c.n_heads, c.n_kv_heads, hs);
    mark(phase::attention);
    ops::matmul(kt_, xb2_.data(), att_.data(), w.wo, T);
    if (w.bo) ops::add_bias(xb2_.data(), w.bo, T, dim);
    mark(phase::wo);
    add_norm(xb_.data(), x_.data(), xb2_.data(), w.rms_ffn, w.ffn_norm_bias);
    mark(phase::norms);

    // Feed-forward block: one SwiGLU, the token's top-k experts, or GPT-2's GELU MLP with biases.
    if (w.is_moe()) {
      moe_->run(kt_, xb2_.data(), xb_.data(), w, T);
      mark(phase::ffn_down);
    } else if (c.ffn == ffn_kind::gelu_tanh) {
      ops::matmul(kt_, hb_.data(), xb_.data(), w.w_up, T);
      ops::add_bias(hb_.data(), w.b_up, T, hid);
      ops::gelu_tanh(kt_, hb_.data(), T, hid);
      mark(phase::ffn_up);
      ops::matmul(kt_, xb2_.data(), hb_.data(), w.w_down, T);
      ops::add_bias(xb2_.data(), w.b_down, T, dim);
      mark(phase::ffn_down);
    } else {
      const ops::matmul_output gate_up[] = {{hb_.data(), w.w_gate}, {hb2_.data(), w.w_up}};
      ops::matmul_group(kt_, gate_up, xb_.data(), T);
      ops::swiglu(kt_, hb_.data(), hb2_.data(), T, hid);
      mark(phase::ffn_up);
      ops::matmul(kt_, xb2_.data(), hb_.data(), w.w_down, T);
      mark(phase::ffn_down);
    }
    if (l + 1 < c.n_layers)
      add_norm(xb_.data(), x_.data(), xb2_.data(), model_.layers[l + 1].rms_att, model_.layers[l + 1].att_norm_bias);
    else
      ops::add(x_.data(), xb2_.data(), T, dim);
    mark(phase::norms);
  }

  // Classifier only for the rows that sample: gather them, normalise, project to the vocabulary.
  const int n_rows = static_cast<int>(b.logits_rows.size());
  if (n_rows == 0) return logits_.get();
  for (int r = 0; r < n_rows; ++r)
    std::memcpy(&xb2_[static_cast<std::size_t>(r) * dim], &x_[static_cast<std::size_t>(b.logits_rows[r]) * dim],
                dim * sizeof(float));
  norm(xb_.data(), xb2_.data(), model_.rms_final, model_.final_norm_bias, n_rows);
  ops::matmul(kt_, logits_.get(), xb_.data(), model_.classifier, n_rows);
  mark(phase::classifier);
  return logits_.get();
}

}  // namespace pagedserve
