// llama.cpp's per-tensor type choice (src/llama-quant.cpp: tensor_get_category, llama_tensor_get_type_impl,
// tensor_type_fallback) for the mixes gguf_recipe names, rewritten branch by branch; each comment names
// the rule it follows.
#include "model/gguf_recipe.hpp"

#include <cctype>
#include <charconv>

#include "model/ggml_blocks.hpp"

namespace pagedserve {
namespace {

using mix = gguf_recipe::mix;

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

// llama-quantize's ftype names and llama_ftype_get_default_type's type for each.
struct ftype_name {
  std::string_view name;
  mix rules;
  dtype base;
};
constexpr ftype_name ftypes[] = {
    {"Q4_0", mix::q4_0, dtype::q4_0},       {"Q4_1", mix::q4_1, dtype::q4_1},
    {"Q5_0", mix::q5_0, dtype::q5_0},       {"Q5_1", mix::q5_1, dtype::q5_1},
    {"Q8_0", mix::q8_0, dtype::q8_0},       {"Q2_K", mix::q2_k, dtype::q2_k},
    {"Q2_K_S", mix::q2_k_s, dtype::q2_k},   {"Q3_K_S", mix::q3_k_s, dtype::q3_k},
    {"Q3_K_M", mix::q3_k_m, dtype::q3_k},   {"Q3_K", mix::q3_k_m, dtype::q3_k},  // llama-quantize's alias
    {"Q3_K_L", mix::q3_k_l, dtype::q3_k},   {"Q4_K_S", mix::q4_k_s, dtype::q4_k},
    {"Q4_K_M", mix::q4_k_m, dtype::q4_k},   {"Q4_K", mix::q4_k_m, dtype::q4_k},  // alias
    {"Q5_K_S", mix::q5_k_s, dtype::q5_k},   {"Q5_K_M", mix::q5_k_m, dtype::q5_k},
    {"Q5_K", mix::q5_k_m, dtype::q5_k},     {"Q6_K", mix::q6_k, dtype::q6_k},  // Q5_K: alias
    {"IQ4_NL", mix::iq4_nl, dtype::iq4_nl}, {"IQ4_XS", mix::iq4_xs, dtype::iq4_xs}};

// llama.cpp's tensor_category, matched in its order (the first substring that fits).
enum class category { output, token_embd, attn_v, attn_k, attn_q, attn_output, ffn_up, ffn_gate, ffn_down, other };

category category_of(std::string_view name) {
  const auto has = [name](std::string_view s) { return name.find(s) != std::string_view::npos; };
  if (name == "output.weight") return category::output;
  if (name == "token_embd.weight") return category::token_embd;
  // attn_qkv and attn_kv_b are "attn_v-like" (category_is_attn_v): they take attn_v's rules and counter.
  if (has("attn_qkv.weight") || has("attn_kv_b.weight") || has("attn_v.weight")) return category::attn_v;
  if (has("attn_k.weight")) return category::attn_k;
  if (has("attn_q.weight")) return category::attn_q;
  if (has("attn_output.weight")) return category::attn_output;
  // ffn_*_exps (MoE experts) and ffn_*_shexp are matched by the same substrings.
  if (has("ffn_up")) return category::ffn_up;
  if (has("ffn_gate")) return category::ffn_gate;
  if (has("ffn_down")) return category::ffn_down;
  return category::other;
}

// llama.cpp's tensor_allows_quantization, for these families' tensors: 2-D and 3-D weights except the
// norms and the MoE router (ffn_gate_inp). The others keep their source type: F32 here.
bool quantizable(std::string_view name, std::span<const std::uint64_t> ne) {
  return ne.size() >= 2 && name.ends_with("weight") && !name.ends_with("_norm.weight") &&
         name.find("ffn_gate_inp.weight") == std::string_view::npos;
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

bool tiles(dtype t, std::uint64_t row) {
  const int n = block_layout_of(t).elements;
  return n == 0 || row % static_cast<std::uint64_t>(n) == 0;
}

// llama.cpp's tensor_type_fallback: a type whose block does not tile the row becomes a 32-weight type,
// and F16 where even that does not tile it. (llama.cpp refuses outright a type it has no fallback for,
// such as a legacy 32-weight type on a row of 100; this writer stores F16 then, as its last resort.)
dtype fallback(dtype t, std::uint64_t row) {
  if (tiles(t, row)) return t;
  switch (t) {
    case dtype::iq4_xs: t = dtype::iq4_nl; break;
    case dtype::q2_k: case dtype::q3_k: t = dtype::q4_0; break;  // older llama.cpp: IQ4_NL
    case dtype::q4_k: t = dtype::q5_0; break;
    case dtype::q5_k: t = dtype::q5_1; break;
    case dtype::q6_k: t = dtype::q8_0; break;
    default: break;
  }
  return tiles(t, row) ? t : dtype::f16;
}

// The classifier, and the embedding when it is the classifier too: Q8_0 where the ftype's block does not
// tile the row, else q6_K (a Q8_0 file keeps Q8_0).
dtype classifier_type(const gguf_recipe& r, std::uint64_t row) {
  if (!tiles(r.base, row)) return dtype::q8_0;
  return r.base == dtype::q8_0 ? dtype::q8_0 : dtype::q6_k;
}

// attn_v (and the attn_v-like tensors); `i` is llama.cpp's i_attention_wv, the tensor's rank among the
// attn_v-like ones in (layer, name) order, n its n_attention_wv: one per layer in these families, so
// the layer and the layer count.
dtype attn_v_type(const gguf_recipe& r, const gguf_recipe_model& m, int i, int n) {
  dtype t = r.base;
  switch (r.rules) {
    case mix::q2_k: t = m.n_gqa >= 4 ? dtype::q4_k : dtype::q3_k; break;  // grouped V: more bits
    case mix::q2_k_s: if (m.n_gqa >= 4) t = dtype::q4_k; break;
    case mix::q3_k_m: t = i < 2 ? dtype::q5_k : dtype::q4_k; break;        // the first two q5_K
    case mix::q3_k_l: t = dtype::q5_k; break;
    case mix::iq4_nl: case mix::iq4_xs: if (m.n_gqa >= 4) t = dtype::q5_k; break;
    case mix::q4_k_m: case mix::q5_k_m: if (use_more_bits(i, n)) t = dtype::q6_k; break;
    case mix::q4_k_s: if (i < 4) t = dtype::q5_k; break;                   // the first four q5_K
    default: break;
  }
  // 70B: attn_v is 8x smaller than attn_q, so q3_K/q4_K become q5_K.
  if (m.type_70b && (t == dtype::q3_k || t == dtype::q4_k)) t = dtype::q5_k;
  if (m.n_experts == 8) t = dtype::q8_0;  // 8 experts (Mixtral): Q8_0 costs little there
  return t;
}

// ffn_down (ffn_down_exps too): i_layer and n_layer as llama.cpp's layer_info gives them (the tensor's
// layer from its name when experts are present, its i_ffn_down counter otherwise: one per layer here).
dtype ffn_down_type(const gguf_recipe& r, int i, int n) {
  switch (r.rules) {
    case mix::q2_k: return dtype::q3_k;
    case mix::q2_k_s: return i < n / 8 ? dtype::q4_k : r.base;
    case mix::q3_k_m: return i < n / 16 ? dtype::q5_k : dtype::q4_k;  // q3_K past the first 16th only on Falcon
    case mix::q3_k_l: return dtype::q5_k;
    case mix::q4_k_m: case mix::q5_k_m: return use_more_bits(i, n) ? dtype::q6_k : r.base;
    case mix::iq4_nl: case mix::iq4_xs: return i < n / 8 ? dtype::q5_k : r.base;  // without an imatrix
    case mix::q4_k_s: return i < n / 8 ? dtype::q5_k : r.base;
    default: return r.base;  // Q4_0/Q5_0's first layers move to Q4_1/Q5_1 only with an imatrix
  }
}

dtype attn_output_type(const gguf_recipe& r, const gguf_recipe_model& m) {
  if (m.n_experts == 8) {  // 8 experts: q5_K for the low-bit mixes (Q3_K_L and the 5/6/8-bit ones keep theirs)
    switch (r.rules) {
      case mix::q2_k: case mix::q3_k_s: case mix::q3_k_m: case mix::iq4_nl: case mix::q4_k_s: case mix::q4_k_m:
      case mix::iq4_xs: return dtype::q5_k;
      default: return r.base;
    }
  }
  switch (r.rules) {
    case mix::q2_k: return dtype::q3_k;
    case mix::q3_k_m: return dtype::q4_k;
    case mix::q3_k_l: return dtype::q5_k;
    default: return r.base;
  }
}

// llama_tensor_get_type_impl for these ftypes, before the fallback.
dtype mixed_type(const gguf_recipe& r, const gguf_recipe_model& m, category cat, int layer, std::uint64_t row) {
  if (cat == category::output || (m.tied_embeddings && cat == category::token_embd)) return classifier_type(r, row);
  switch (cat) {
    case category::attn_v: return attn_v_type(r, m, layer, m.n_layers);
    case category::attn_k: return m.n_experts == 8 ? dtype::q8_0 : r.base;  // 8 experts: Q8_0
    case category::ffn_down: return ffn_down_type(r, layer, m.n_layers);
    case category::attn_output: return attn_output_type(r, m);
    // token_embd (untied), attn_q, ffn_gate, ffn_up: only the IQ1/IQ2/IQ3/TQ ftypes change them. The
    // ATTENTION_QKV branch llama.cpp still has is unreachable since attn_qkv is attn_v-like.
    default: return r.base;
  }
}

}  // namespace

std::optional<gguf_recipe> gguf_recipe_parse(std::string_view name) {
  std::string upper(name);  // llama-quantize takes its names in any case
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  const std::string_view u = upper;
  for (const ftype_name& f : ftypes)
    if (f.name == u) return gguf_recipe{std::string(name), f.base, f.rules};
  const bool pure = u.starts_with("PURE:");
  const std::optional<dtype> t = type_named(pure ? u.substr(5) : u);
  if (!t || (!pure && is_block_quantized(*t))) return std::nullopt;  // "Q6_K" etc. are ftypes above
  return gguf_recipe{std::string(name), *t, mix::plain};
}

gguf_recipe_model gguf_recipe_model_of(const model_config& c) {
  const bool gqa = c.n_kv_heads > 0 && c.n_heads != c.n_kv_heads;
  return {.n_layers = c.n_layers,
          .n_gqa = c.n_kv_heads > 0 ? c.n_heads / c.n_kv_heads : 1,
          .tied_embeddings = c.shared_classifier,
          .n_experts = c.n_experts,
          .type_70b = c.n_layers == 80 && ((c.architecture == "llama" && gqa) || c.architecture == "qwen2")};
}

dtype gguf_recipe_type(const gguf_recipe& r, const gguf_recipe_model& m, std::string_view name,
                       std::span<const std::uint64_t> ne) {
  if (!quantizable(name, ne)) return dtype::f32;
  if (r.rules == mix::plain) return fallback(r.base, ne[0]);  // --pure, or a float ftype (always tiles)
  return fallback(mixed_type(r, m, category_of(name), layer_of(name), ne[0]), ne[0]);
}

}  // namespace pagedserve
