// GPT-2 from a Hugging Face folder: transformers' GPT2LMHeadModel state dict, names as
// modeling_gpt2.py registers them.
#include <algorithm>
#include <set>

#include "model/hf_gpt2.hpp"
#include "model/ps_try.hpp"
#include "model/hf_tensor_source.hpp"

namespace pagedserve::hf {
namespace {

std::expected<void, std::string> load_block(tensor_source& src, const model_config& c, const std::string& at,
                                            layer_weights& w) {
  const int dim = c.dim, hid = c.hidden_dim;
  PS_TRY(w.rms_att, src.vector(at + "ln_1.weight", dim));
  PS_TRY(w.att_norm_bias, src.vector(at + "ln_1.bias", dim));
  // c_attn: [dim, 3 dim] = [in, q | k | v].
  PS_TRY(w.wq, src.matrix_transposed(at + "attn.c_attn.weight", 3 * dim, 0, dim, dim));
  PS_TRY(w.wk, src.matrix_transposed(at + "attn.c_attn.weight", 3 * dim, dim, dim, dim));
  PS_TRY(w.wv, src.matrix_transposed(at + "attn.c_attn.weight", 3 * dim, 2 * dim, dim, dim));
  const float* qkv_bias = nullptr;
  PS_TRY(qkv_bias, src.vector(at + "attn.c_attn.bias", 3 * dim));
  w.bq = qkv_bias, w.bk = qkv_bias + dim, w.bv = qkv_bias + 2 * dim;
  PS_TRY(w.wo, src.matrix_transposed(at + "attn.c_proj.weight", dim, 0, dim, dim));
  PS_TRY(w.bo, src.vector(at + "attn.c_proj.bias", dim));
  PS_TRY(w.rms_ffn, src.vector(at + "ln_2.weight", dim));
  PS_TRY(w.ffn_norm_bias, src.vector(at + "ln_2.bias", dim));
  PS_TRY(w.w_up, src.matrix_transposed(at + "mlp.c_fc.weight", hid, 0, hid, dim));
  PS_TRY(w.b_up, src.vector(at + "mlp.c_fc.bias", hid));
  PS_TRY(w.w_down, src.matrix_transposed(at + "mlp.c_proj.weight", dim, 0, dim, hid));
  PS_TRY(w.b_down, src.vector(at + "mlp.c_proj.bias", dim));
  return {};
}

}  // namespace

std::expected<void, std::string> gpt2_load_tensors(const safetensors_set& set, const model_config& c, model& m) {
  tensor_source src(set, m);
  const std::string prefix = src.has("transformer.wte.weight") ? "transformer." : "";
  PS_TRY(m.token_embedding, src.matrix(prefix + "wte.weight", c.vocab_size, c.dim));
  PS_TRY(m.position_embedding, src.matrix(prefix + "wpe.weight", c.seq_len, c.dim));
  m.layers.resize(c.n_layers);
  std::set<std::string> skipped;  // the causal-mask buffers older files carry: not weights
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string at = prefix + "h." + std::to_string(l) + ".";
    if (auto r = load_block(src, c, at, m.layers[l]); !r) return r;
    skipped.insert({at + "attn.bias", at + "attn.masked_bias"});
  }
  PS_TRY(m.rms_final, src.vector(prefix + "ln_f.weight", c.dim));
  PS_TRY(m.final_norm_bias, src.vector(prefix + "ln_f.bias", c.dim));
  if (c.shared_classifier)
    m.classifier = m.token_embedding;  // an lm_head.weight in the file is wte saved twice
  else
    PS_TRY(m.classifier, src.matrix("lm_head.weight", c.vocab_size, c.dim));
  if (c.shared_classifier) skipped.insert("lm_head.weight");
  for (const std::string& name : src.unused())
    if (!skipped.contains(name))
      return std::unexpected("tensor '" + name + "' is not part of GPT2LMHeadModel (as config.json describes it)");
  return {};
}

}  // namespace pagedserve::hf
