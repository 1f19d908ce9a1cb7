#pragma once
// Which ggml type each tensor of a model gets when gguf_writer writes it under one of llama.cpp's
// quantization mixes (the llama-quantize ftypes "Q2_K" ... "Q6_K", "Q3_K_M", "Q4_K_M", "IQ4_XS", ...), so
// tests and synthetic models have the per-tensor mix real files have: Q4_K_M is q4_K for most
// matrices, q6_K for the classifier and for attn_v / ffn_down in the layers llama.cpp gives more bits.
// The rules are llama.cpp's llama-quant.cpp (llama_tensor_get_type) for every k-quant, legacy and IQ4
// ftype, for the tensors of its Llama and Qwen families, its 8-expert and 70B bumps included. Left out,
// as no file of these ftypes depends on them: the imatrix-only rules (Q4_0/Q5_0's first ffn_down layers
// with an importance matrix; Q2_K_S needs one in llama.cpp, its types are the same), the Falcon rules,
// and the IQ1/IQ2/IQ3/TQ/MXFP4 ftypes, whose block types the loader does not read.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "pagedserve/model.hpp"
#include "pagedserve/weight.hpp"

namespace pagedserve {

struct gguf_recipe {
  // llama.cpp's llama_ftype (LLAMA_FTYPE_MOSTLY_<MIX>), or plain: one type for every matrix.
  enum class mix {
    plain, q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q2_k_s, q3_k_s, q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s,
    q5_k_m, q6_k, iq4_nl, iq4_xs
  };
  std::string name;         // as parsed: "Q4_K_M", "F16", "pure:Q4_K"
  dtype base = dtype::f32;  // the ftype's default type: most matrices
  // plain: every matrix `base` (F32/F16/BF16, or a block type as llama-quantize --pure writes it);
  // otherwise llama.cpp's per-tensor rules of that ftype.
  mix rules = mix::plain;
};

// llama-quantize's names: "F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q2_K_S",
// "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS" (and
// its aliases "Q3_K", "Q4_K", "Q5_K" for the _M mixes), or "pure:<type>" (one type for every matrix,
// <type> any of the plain and block type names, Q2_K ... Q6_K included), in any case as llama-quantize
// takes them; nullopt otherwise.
std::optional<gguf_recipe> gguf_recipe_parse(std::string_view name);

// What the rules look at besides the tensor (llama.cpp's quantize_state and hparams).
struct gguf_recipe_model {
  int n_layers = 0;
  int n_gqa = 1;                 // query heads per KV head
  bool tied_embeddings = false;  // no output.weight: token_embd is the classifier too
  int n_experts = 0;             // experts per MoE layer (0: dense); exactly 8 gets Mixtral's bumps
  bool type_70b = false;         // llama.cpp's LLM_TYPE_70B: its attn_v gets q5_K for q3_K/q4_K
};

// The recipe inputs of a model of config c (type_70b: an 80-layer GQA llama, or an 80-layer qwen2, as
// llama.cpp's load_hparams types them).
gguf_recipe_model gguf_recipe_model_of(const model_config& c);

// The type of tensor `name` (llama.cpp's name, "blk.3.attn_v.weight") of dimensions ne (fastest
// first). Vectors, norms and the MoE router (ffn_gate_inp) stay F32; a block type whose block does not
// tile ne[0] falls back as llama.cpp does (q4_K to q5_0, q6_K to q8_0, ..., then F16).
dtype gguf_recipe_type(const gguf_recipe& r, const gguf_recipe_model& m, std::string_view name,
                       std::span<const std::uint64_t> ne);

}  // namespace pagedserve
