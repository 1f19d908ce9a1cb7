// The Llama forward pass over one step's flat token batch, top to bottom.
#include "pagedserve/forward.hpp"

#include <tbb/parallel_for.h>

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
  q_.resize(T * c.dim);
  k_.resize(T * c.kv_dim());
  v_.resize(T * c.kv_dim());
  att_.resize(T * c.dim);
  hb_.resize(T * c.hidden_dim);
  hb2_.resize(T * c.hidden_dim);
  logits_.resize(T * static_cast<std::size_t>(c.vocab_size));
}

namespace {

// x[n] += y[n], parallel over tokens.
void add_residual(float* x, const float* y, int n_tokens, int dim) {
  tbb::parallel_for(0, n_tokens, [&](int t) {
    float* xt = x + static_cast<std::size_t>(t) * dim;
    const float* yt = y + static_cast<std::size_t>(t) * dim;
    for (int i = 0; i < dim; ++i) xt[i] += yt[i];
  });
}

}  // namespace

float* forward_pass::run(const step_batch& b, const kv_cache& cache) {
  const model_config& c = model_.config;
  const int T = b.n_tokens();
  ps_check(T > 0 && T <= max_tokens_, "forward: step token count out of range");
  const int dim = c.dim, kv_dim = c.kv_dim(), hid = c.hidden_dim, hs = c.head_size();

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
    std::memcpy(&x_[static_cast<std::size_t>(t) * dim], model_.token_embedding + static_cast<std::size_t>(id) * dim,
                dim * sizeof(float));
  }

  for (int l = 0; l < c.n_layers; ++l) {
    const layer_weights& w = model_.layers[l];
    // Attention block.
    kernels::ops::rmsnorm(kt_, xb_.data(), x_.data(), w.rms_att, T, dim, c.rms_norm_eps);
    kernels::ops::matmul(kt_, q_.data(), xb_.data(), w.wq, T, dim, dim);
    kernels::ops::matmul(kt_, k_.data(), xb_.data(), w.wk, T, dim, kv_dim);
    kernels::ops::matmul(kt_, v_.data(), xb_.data(), w.wv, T, dim, kv_dim);
    kernels::ops::rope(q_.data(), b.positions.data(), T, c.n_heads, hs, c.rope_theta);
    kernels::ops::rope(k_.data(), b.positions.data(), T, c.n_kv_heads, hs, c.rope_theta);
    for (int t = 0; t < T; ++t) {  // this step's keys and values into their paged slots
      std::memcpy(cache.key_at(l, b.slots[t]), &k_[static_cast<std::size_t>(t) * kv_dim], kv_dim * sizeof(float));
      std::memcpy(cache.value_at(l, b.slots[t]), &v_[static_cast<std::size_t>(t) * kv_dim], kv_dim * sizeof(float));
    }
    kernels::ops::paged_attention(kt_, att_.data(), q_.data(), cache.layer(l), ab, c.n_heads, c.n_kv_heads, hs);
    kernels::ops::matmul(kt_, xb2_.data(), att_.data(), w.wo, T, dim, dim);
    add_residual(x_.data(), xb2_.data(), T, dim);

    // SwiGLU feed-forward block.
    kernels::ops::rmsnorm(kt_, xb_.data(), x_.data(), w.rms_ffn, T, dim, c.rms_norm_eps);
    kernels::ops::matmul(kt_, hb_.data(), xb_.data(), w.w1, T, dim, hid);
    kernels::ops::matmul(kt_, hb2_.data(), xb_.data(), w.w3, T, dim, hid);
    kernels::ops::swiglu(kt_, hb_.data(), hb2_.data(), T, hid);
    kernels::ops::matmul(kt_, xb2_.data(), hb_.data(), w.w2, T, hid, dim);
    add_residual(x_.data(), xb2_.data(), T, dim);
  }

  // Classifier only for the rows that sample: gather them, normalise, project to the vocabulary.
  const int n_rows = static_cast<int>(b.logits_rows.size());
  if (n_rows == 0) return logits_.data();
  for (int r = 0; r < n_rows; ++r)
    std::memcpy(&xb2_[static_cast<std::size_t>(r) * dim], &x_[static_cast<std::size_t>(b.logits_rows[r]) * dim],
                dim * sizeof(float));
  kernels::ops::rmsnorm(kt_, xb_.data(), xb2_.data(), model_.rms_final, n_rows, dim, c.rms_norm_eps);
  kernels::ops::matmul(kt_, logits_.data(), xb_.data(), model_.classifier, n_rows, dim, c.vocab_size);
  return logits_.data();
}

}  // namespace pagedserve
