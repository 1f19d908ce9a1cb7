#pragma once
// One transformer block's weights read by name from a tensor source: the same sequence of lookups
// for a GGUF file (gguf_loader.cpp) and a safetensors set (hf_loader.cpp, hf_gpt2_loader.cpp), each
// format passing only its tensor names. A source has vector(name, n) -> fp32 vector and
// matrix(name, rows, cols) -> weight; GPT-2's fused and Conv1D tensors come through a part reader
// part(name, n_total, first, rows, cols) -> weight, since each format stores them differently.
#include <expected>
#include <string>

#include "model/ps_try.hpp"
#include "pagedserve/model.hpp"

namespace pagedserve {

// A Llama-family block's tensor names; the optional ones are read only when parts says so.
struct llama_block_names {
  std::string attn_norm, wq, wk, wv, wo;
  std::string bq, bk, bv, bo;  // attention biases (Qwen2's q/k/v, Llama's attention_bias)
  std::string q_norm, k_norm;  // per-head RMSNorm of q and k (Qwen3)
  std::string ffn_norm, gate, up, down;
};

// Which optional tensors the block has.
struct llama_block_parts {
  bool qkv_bias = false, o_bias = false, qk_norm = false;
};

// The attention half and both norms; the FFN (dense or experts) is the caller's next step.
template <class Source>
std::expected<void, std::string> llama_block_attention_load(Source& src, const model_config& c,
                                                            const llama_block_names& n,
                                                            const llama_block_parts& parts, layer_weights& w) {
  const int dim = c.dim, qd = c.q_dim(), kvd = c.kv_dim(), hs = c.head_size();
  PS_TRY(w.rms_att, src.vector(n.attn_norm, dim));
  PS_TRY(w.wq, src.matrix(n.wq, qd, dim));
  PS_TRY(w.wk, src.matrix(n.wk, kvd, dim));
  PS_TRY(w.wv, src.matrix(n.wv, kvd, dim));
  PS_TRY(w.wo, src.matrix(n.wo, dim, qd));
  if (parts.qkv_bias) {
    PS_TRY(w.bq, src.vector(n.bq, qd));
    PS_TRY(w.bk, src.vector(n.bk, kvd));
    PS_TRY(w.bv, src.vector(n.bv, kvd));
  }
  if (parts.o_bias) PS_TRY(w.bo, src.vector(n.bo, dim));
  if (parts.qk_norm) {
    PS_TRY(w.q_norm, src.vector(n.q_norm, hs));
    PS_TRY(w.k_norm, src.vector(n.k_norm, hs));
  }
  PS_TRY(w.rms_ffn, src.vector(n.ffn_norm, dim));
  return {};
}

// The dense SwiGLU FFN of a block without experts.
template <class Source>
std::expected<void, std::string> llama_block_dense_ffn_load(Source& src, const model_config& c,
                                                            const llama_block_names& n, layer_weights& w) {
  PS_TRY(w.w_gate, src.matrix(n.gate, c.hidden_dim, c.dim));
  PS_TRY(w.w_up, src.matrix(n.up, c.hidden_dim, c.dim));
  PS_TRY(w.w_down, src.matrix(n.down, c.dim, c.hidden_dim));
  return {};
}

// A GPT-2 block's tensor names: LayerNorms with biases, fused QKV rows [q | k | v], an MLP with biases.
struct gpt2_block_names {
  std::string attn_norm, attn_norm_bias, qkv, qkv_bias, wo, bo;
  std::string ffn_norm, ffn_norm_bias, up, b_up, down, b_down;
};

template <class Source, class PartReader>
std::expected<void, std::string> gpt2_block_load(Source& src, PartReader part, const model_config& c,
                                                 const gpt2_block_names& n, layer_weights& w) {
  const int dim = c.dim, hid = c.hidden_dim;
  PS_TRY(w.rms_att, src.vector(n.attn_norm, dim));
  PS_TRY(w.att_norm_bias, src.vector(n.attn_norm_bias, dim));
  PS_TRY(w.wq, part(n.qkv, 3 * dim, 0, dim, dim));
  PS_TRY(w.wk, part(n.qkv, 3 * dim, dim, dim, dim));
  PS_TRY(w.wv, part(n.qkv, 3 * dim, 2 * dim, dim, dim));
  const float* qkv_bias = nullptr;
  PS_TRY(qkv_bias, src.vector(n.qkv_bias, 3 * dim));
  w.bq = qkv_bias, w.bk = qkv_bias + dim, w.bv = qkv_bias + 2 * dim;
  PS_TRY(w.wo, part(n.wo, dim, 0, dim, dim));
  PS_TRY(w.bo, src.vector(n.bo, dim));
  PS_TRY(w.rms_ffn, src.vector(n.ffn_norm, dim));
  PS_TRY(w.ffn_norm_bias, src.vector(n.ffn_norm_bias, dim));
  PS_TRY(w.w_up, part(n.up, hid, 0, hid, dim));
  PS_TRY(w.b_up, src.vector(n.b_up, hid));
  PS_TRY(w.w_down, part(n.down, dim, 0, dim, hid));
  PS_TRY(w.b_down, src.vector(n.b_down, dim));
  return {};
}

}  // namespace pagedserve
