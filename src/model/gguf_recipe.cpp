// llama.cpp's per-tensor type choice for the mixes gguf_recipe names.
#include "model/gguf_recipe.hpp"

#include <charconv>

#include "model/ggml_blocks.hpp"

namespace pagedserve {
namespace {

std::optional<dtype> type_named(std::string_view name) {
  static constexpr std::pair<std::string_view, dtype> names[] = {
      {"F32", dtype::f32},   {"F16", dtype::f16},   {"BF16", dtype::bf16}, {"Q4_0", dtype::q4_0},
      {"Q4_1", dtype::q4_1}, {"Q5_0", dtype::q5_0}, {"Q5_1", dtype::q5_1}, {"Q8_0", dtype::q8_0},
      {"Q2_K", dtype::q2_k}, {"Q3_K", dtype::q3_k}, {"Q4_K", dtype::q4_k}, {"Q5_K", dtype::q5_k},
      {"Q6_K", dtype::q6_k}, {"IQ4_NL", dtype::iq4_nl}, {"IQ4_XS", dtype::iq4_xs}};
  for (const auto& [n, t] : names)
    if (n == name) return t;
  return std::nullopt;
}

// llama.cpp's use_more_bits: the first and last eighth of the layers, and every third one between.
bool use_more_bits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

// blk.N. -> N; -1 for a tensor outside the blocks.
int layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  int layer = -1;
  std::from_chars(name.data() + 4, name.data() + name.size(), layer);
  return layer;
}

// llama.cpp's tensor_type_fallback: a type whose block does not tile the row.
dtype fallback(dtype t, std::uint64_t row) {
  auto fits = [row](dtype d) { return block_layout_of(d).elements == 0 || row % block_layout_of(d).elements == 0; };
  if (fits(t)) return t;
  switch (t) {
    case dtype::q2_k: case dtype::q3_k: case dtype::iq4_xs: t = dtype::iq4_nl; break;
    case dtype::q4_k: t = dtype::q5_0; break;
    case dtype::q5_k: t = dtype::q5_1; break;
    case dtype::q6_k: t = dtype::q8_0; break;
    default: break;
  }
  return fits(t) ? t : dtype::f16;
}

}  // namespace

std::optional<gguf_recipe> gguf_recipe_parse(std::string_view name) {
  if (name == "Q4_K_M") return gguf_recipe{std::string(name), dtype::q4_k, gguf_recipe::mix::q4_k_m};
  if (name == "Q5_K_M") return gguf_recipe{std::string(name), dtype::q5_k, gguf_recipe::mix::q5_k_m};
  const bool pure = name.starts_with("pure:");
  const std::optional<dtype> t = type_named(pure ? name.substr(5) : name);
  if (!t) return std::nullopt;
  const bool plain = pure || !is_block_quantized(*t);
  return gguf_recipe{std::string(name), *t, plain ? gguf_recipe::mix::plain : gguf_recipe::mix::ggml_default};
}

dtype gguf_recipe_type(const gguf_recipe& r, const gguf_recipe_model& m, std::string_view name,
                       std::span<const std::uint64_t> ne) {
  if (ne.size() < 2 || name.ends_with("_norm.weight") || name.find("ffn_gate_inp") != std::string_view::npos)
    return dtype::f32;
  if (r.rules == gguf_recipe::mix::plain) return fallback(r.base, ne[0]);
  const bool iq4 = r.base == dtype::iq4_nl || r.base == dtype::iq4_xs;
  const bool k_m = r.rules == gguf_recipe::mix::q4_k_m || r.rules == gguf_recipe::mix::q5_k_m;
  const int layer = layer_of(name);
  dtype t = r.base;
  if (name == "output.weight" || (m.tied_embeddings && name == "token_embd.weight")) {
    if (t != dtype::q8_0) t = dtype::q6_k;
  } else if (name.find("attn_v.weight") != std::string_view::npos) {
    if (iq4 && m.n_gqa >= 4) t = dtype::q5_k;
    else if (k_m && use_more_bits(layer, m.n_layers)) t = dtype::q6_k;
  } else if (name.find("ffn_down") != std::string_view::npos) {
    if (k_m && use_more_bits(layer, m.n_layers)) t = dtype::q6_k;
    else if (iq4 && layer < m.n_layers / 8) t = dtype::q5_k;
  }
  return fallback(t, ne[0]);
}

}  // namespace pagedserve
