// GPT-2 from a Hugging Face folder: transformers' GPT2LMHeadModel state dict, names as
// modeling_gpt2.py registers them.
#include <algorithm>
#include <set>

#include "model/block_loader.hpp"
#include "model/hf_gpt2.hpp"
#include "model/ps_try.hpp"
#include "model/hf_tensor_source.hpp"

namespace pagedserve::hf {
namespace {

std::expected<void, std::string> load_block(tensor_source& src, const model_config& c, const std::string& at,
                                            layer_weights& w) {
  const gpt2_block_names n{
      .attn_norm = at + "ln_1.weight", .attn_norm_bias = at + "ln_1.bias", .qkv = at + "attn.c_attn.weight",
      .qkv_bias = at + "attn.c_attn.bias", .wo = at + "attn.c_proj.weight", .bo = at + "attn.c_proj.bias",
      .ffn_norm = at + "ln_2.weight", .ffn_norm_bias = at + "ln_2.bias", .up = at + "mlp.c_fc.weight",
      .b_up = at + "mlp.c_fc.bias", .down = at + "mlp.c_proj.weight", .b_down = at + "mlp.c_proj.bias"};
  // Conv1D weights are stored [in, out]: each matrix is columns of the stored one, transposed (c_attn:
  // [dim, 3 dim] = [in, q | k | v]).
  const auto columns = [&src](const std::string& name, int n_cols, int col0, int count, int cols) {
    return src.matrix_transposed(name, n_cols, col0, count, cols);
  };
  return gpt2_block_load(src, columns, c, n, w);
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
