#pragma once
// Which ggml type each tensor of a model gets when gguf_writer writes it under one of llama.cpp's
// quantization mixes (its llama-quantize ftypes "Q4_K_M", "Q5_K_M", "Q6_K", "Q4_0", "Q8_0", "IQ4_XS",
// ...), so tests and synthetic models have the per-tensor mix real files have: Q4_K_M is q4_K for most
// matrices, q6_K for the classifier and for attn_v / ffn_down in the layers llama.cpp gives more bits.
// The rules follow llama.cpp's llama-quant.cpp (llama_tensor_get_type) for these ftypes, without its
// imatrix, 70B and 8-expert special cases.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "pagedserve/weight.hpp"

namespace pagedserve {

struct gguf_recipe {
  enum class mix { plain, q4_k_m, q5_k_m, ggml_default };
  std::string name;     // as parsed: "Q4_K_M", "F16", "Q4_K (pure)"
  dtype base = dtype::f32;  // most matrices
  // plain: every matrix `base` (F32/F16/BF16, or a "pure" block type as llama-quantize --pure);
  // q4_k_m / q5_k_m: the _M mixes; ggml_default: llama.cpp's rules for a plain ftype (Q4_0, Q6_K,
  // Q8_0, IQ4_XS ...: the classifier q6_K, IQ4's attn_v and first ffn_down layers q5_K).
  mix rules = mix::plain;
};

// "F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
// "IQ4_NL", "IQ4_XS" (llama.cpp's rules), "Q4_K_M", "Q5_K_M", or "pure:<type>" (one type for every
// matrix); nullopt otherwise.
std::optional<gguf_recipe> gguf_recipe_parse(std::string_view name);

// What the rules look at besides the tensor (llama.cpp's quantize_state).
struct gguf_recipe_model {
  int n_layers = 0;
  int n_gqa = 1;             // query heads per KV head
  bool tied_embeddings = false;  // no output.weight: token_embd is the classifier too
};

// The type of tensor `name` (llama.cpp's name, "blk.3.attn_v.weight") of dimensions ne (fastest
// first). Vectors, norms and the MoE router (ffn_gate_inp) stay F32; a block type whose block does not
// tile ne[0] falls back as llama.cpp does (q4_K to q5_0, q6_K to q8_0, ..., then F16).
dtype gguf_recipe_type(const gguf_recipe& r, const gguf_recipe_model& m, std::string_view name,
                       std::span<const std::uint64_t> ne);

}  // namespace pagedserve
