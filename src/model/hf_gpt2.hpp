#pragma once
// GPT2LMHeadModel's tensors from a safetensors set (hf_gpt2_loader.cpp).
#include <expected>
#include <string>

#include "pagedserve/model.hpp"
#include "model/safetensors.hpp"

namespace pagedserve::hf {

// Fills m's weights from GPT-2's names, with or without the `transformer.` prefix (save_pretrained
// writes it; the original checkpoints do not): wte, wpe, h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2,
// mlp.c_fc, mlp.c_proj}, ln_f, lm_head when untied. Conv1D weights are stored [in, out]: they are
// transposed to [out, in] (c_attn split into q, k and v). The causal-mask buffers h.N.attn.bias and
// h.N.attn.masked_bias are skipped; any other tensor the model does not use is an error.
std::expected<void, std::string> gpt2_load_tensors(const safetensors_set& set, const model_config& c, model& m);

}  // namespace pagedserve::hf
