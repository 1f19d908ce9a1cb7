#pragma once
// Small random-weight models written as GGUF files the way llama.cpp's convert_hf_to_gguf.py writes
// them: an arch_spec's HF tensors renamed to llama.cpp's names, llama-arch Q/K rows permuted to the
// interleaved RoPE layout, MoE experts stacked into 3-D tensors, and `<arch>.*` metadata. Also the
// block formats written out independently of the library (ggml's reference formulas), so tests can
// give the scalar reference exactly the weights a quantized file holds.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "model/hf_test_model.hpp"
#include "model/gguf_recipe.hpp"
#include "model/gguf_writer.hpp"

namespace pagedserve::test {

inline std::string gguf_arch_name(const arch_spec& s) {
  if (s.architecture == "Qwen2ForCausalLM") return "qwen2";
  if (s.architecture == "Qwen3ForCausalLM") return "qwen3";
  if (s.architecture == "Qwen3MoeForCausalLM") return "qwen3moe";
  return "llama";
}

// ggml's quantize_row_q8_0_ref followed by dequantize_row_q8_0, on one row (cols % 32 == 0).
inline void q8_0_round_trip(float* x, std::size_t n) {
  for (std::size_t b = 0; b < n; b += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b + j]));
    const float d0 = amax / 127.0f, id = d0 != 0.0f ? 1.0f / d0 : 0.0f;
    const float d = f16_to_f32(f32_to_f16(d0));
    for (int j = 0; j < 32; ++j) x[b + j] = static_cast<float>(static_cast<int>(std::roundf(x[b + j] * id))) * d;
  }
}

// ggml's quantize_row_q4_0_ref followed by dequantize_row_q4_0.
inline void q4_0_round_trip(float* x, std::size_t n) {
  for (std::size_t b = 0; b < n; b += 32) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j)
      if (amax < std::fabs(x[b + j])) amax = std::fabs(x[b + j]), max = x[b + j];
    const float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const float dh = f16_to_f32(f32_to_f16(d));
    for (int j = 0; j < 32; ++j) {
      const int q = std::min(15, static_cast<int>(static_cast<std::int8_t>(x[b + j] * id + 8.5f)));
      x[b + j] = static_cast<float>(q - 8) * dh;
    }
  }
}

// The weights a file of `type` holds for `t`: matrices (2-D) quantized and dequantized, vectors as is.
inline tensor_map gguf_stored_values(tensor_map t, gguf_tensor_type type) {
  for (auto& [name, tensor] : t) {
    if (tensor.shape.size() != 2) continue;
    if (type == gguf_tensor_type::q8_0) q8_0_round_trip(tensor.values.data(), tensor.values.size());
    if (type == gguf_tensor_type::q4_0) q4_0_round_trip(tensor.values.data(), tensor.values.size());
    if (type == gguf_tensor_type::f16)
      for (float& v : tensor.values) v = f16_to_f32(f32_to_f16(v));
  }
  return t;
}

// convert_hf_to_gguf.py's LlamaModel.permute: HF's rotate-half rows of each head -> interleaved pairs.
inline std::vector<float> llama_permute(const std::vector<float>& w, int n_heads, int cols) {
  const std::size_t rows = w.size() / cols, hd = rows / n_heads, half = hd / 2;
  std::vector<float> out(w.size());
  for (std::size_t h = 0; h < static_cast<std::size_t>(n_heads); ++h)
    for (std::size_t i = 0; i < half; ++i)
      for (std::size_t j = 0; j < 2; ++j)
        std::memcpy(&out[(h * hd + 2 * i + j) * cols], &w[(h * hd + j * half + i) * cols], cols * sizeof(float));
  return out;
}

// Metadata for s as llama.cpp names it (no tokenizer); `skip` leaves one key out (corrupt-file tests).
inline void gguf_add_spec_metadata(gguf_writer& w, const arch_spec& s, const std::string& skip = "") {
  const std::string a = gguf_arch_name(s);
  auto u32 = [&](const std::string& key, int v) { if (key != skip) w.add_u32(key, static_cast<std::uint32_t>(v)); };
  auto f32 = [&](const std::string& key, double v) { if (key != skip) w.add_f32(key, static_cast<float>(v)); };
  if (skip != "general.architecture") w.add_string("general.architecture", a);
  w.add_string("general.name", "test-" + s.name);
  u32(a + ".context_length", s.max_pos);
  u32(a + ".embedding_length", s.dim);
  u32(a + ".block_count", s.layers);
  u32(a + ".attention.head_count", s.heads);
  u32(a + ".attention.head_count_kv", s.kv_heads);
  f32(a + ".rope.freq_base", s.theta);
  f32(a + ".attention.layer_norm_rms_epsilon", s.eps);
  if (s.head_dim > 0) {
    u32(a + ".attention.key_length", s.head_dim);
    u32(a + ".attention.value_length", s.head_dim);
  }
  if (s.experts > 0) {
    u32(a + ".expert_count", s.experts);
    u32(a + ".expert_used_count", s.top_k);
    u32(a + ".expert_feed_forward_length", s.moe_hidden);
    w.add_bool(a + ".expert_weights_norm", s.norm_topk);
  } else {
    u32(a + ".feed_forward_length", s.hidden);
  }
  if (s.yarn_scaling) {  // as convert_hf_to_gguf.py writes HF's rope_scaling
    if (skip != a + ".rope.scaling.type") w.add_string(a + ".rope.scaling.type", "yarn");
    f32(a + ".rope.scaling.factor", s.factor);
    u32(a + ".rope.scaling.original_context_length", s.original_max_pos);
    if (s.yarn_attention_factor > 0) f32(a + ".rope.scaling.yarn_attn_factor", s.yarn_attention_factor);
  }
  u32("tokenizer.ggml.bos_token_id", 1);
  u32("tokenizer.ggml.eos_token_id", 2);
}

// The tensors of t under llama.cpp's names, each stored as type_of(name, ne) says.
template <class TypeOf>
void gguf_add_spec_tensors_typed(gguf_writer& w, const arch_spec& s, const tensor_map& t, TypeOf type_of) {
  const bool llama = gguf_arch_name(s) == "llama";
  auto put = [&](const std::string& name, const test_tensor& x, std::vector<float> values) {
    std::vector<std::uint64_t> ne(x.shape.rbegin(), x.shape.rend());
    w.add_tensor(name, ne, type_of(name, ne), values);
  };
  auto copy = [&](const std::string& to, const std::string& from) { put(to, t.at(from), t.at(from).values); };
  auto permuted = [&](const std::string& to, const std::string& from, int heads) {
    const test_tensor& x = t.at(from);
    const int cols = x.shape.size() == 2 ? static_cast<int>(x.shape[1]) : 1;
    put(to, x, llama ? llama_permute(x.values, heads, cols) : x.values);
  };
  copy("token_embd.weight", "model.embed_tokens.weight");
  for (int l = 0; l < s.layers; ++l) {
    const std::string hf = "model.layers." + std::to_string(l) + ".", at = "blk." + std::to_string(l) + ".";
    copy(at + "attn_norm.weight", hf + "input_layernorm.weight");
    permuted(at + "attn_q.weight", hf + "self_attn.q_proj.weight", s.heads);
    permuted(at + "attn_k.weight", hf + "self_attn.k_proj.weight", s.kv_heads);
    copy(at + "attn_v.weight", hf + "self_attn.v_proj.weight");
    copy(at + "attn_output.weight", hf + "self_attn.o_proj.weight");
    if (s.qkv_bias || s.attention_bias) {
      permuted(at + "attn_q.bias", hf + "self_attn.q_proj.bias", s.heads);
      permuted(at + "attn_k.bias", hf + "self_attn.k_proj.bias", s.kv_heads);
      copy(at + "attn_v.bias", hf + "self_attn.v_proj.bias");
    }
    if (s.attention_bias) copy(at + "attn_output.bias", hf + "self_attn.o_proj.bias");
    if (s.qk_norm) {
      copy(at + "attn_q_norm.weight", hf + "self_attn.q_norm.weight");
      copy(at + "attn_k_norm.weight", hf + "self_attn.k_norm.weight");
    }
    copy(at + "ffn_norm.weight", hf + "post_attention_layernorm.weight");
    if (!s.moe_layer(l)) {
      copy(at + "ffn_gate.weight", hf + "mlp.gate_proj.weight");
      copy(at + "ffn_up.weight", hf + "mlp.up_proj.weight");
      copy(at + "ffn_down.weight", hf + "mlp.down_proj.weight");
      continue;
    }
    copy(at + "ffn_gate_inp.weight", hf + "mlp.gate.weight");
    for (const auto& [proj, name] : {std::pair{"gate_proj", "ffn_gate_exps"}, std::pair{"up_proj", "ffn_up_exps"},
                                     std::pair{"down_proj", "ffn_down_exps"}}) {
      test_tensor stacked;  // [experts, rows, cols]
      for (int e = 0; e < s.experts; ++e) {
        const test_tensor& x = t.at(hf + "mlp.experts." + std::to_string(e) + "." + proj + ".weight");
        stacked.shape = {s.experts, x.shape[0], x.shape[1]};
        stacked.values.insert(stacked.values.end(), x.values.begin(), x.values.end());
      }
      put(at + name + ".weight", stacked, stacked.values);
    }
  }
  copy("output_norm.weight", "model.norm.weight");
  if (!s.tied) copy("output.weight", "lm_head.weight");
}

// Each tensor stored as the recipe picks (llama.cpp's mixes: the router and norms stay F32).
inline void gguf_add_spec_tensors(gguf_writer& w, const arch_spec& s, const tensor_map& t, const gguf_recipe& recipe) {
  const gguf_recipe_model shape{.n_layers = s.layers, .n_gqa = s.heads / s.kv_heads, .tied_embeddings = s.tied,
                                 .n_experts = s.experts};
  gguf_add_spec_tensors_typed(w, s, t, [&](const std::string& name, const std::vector<std::uint64_t>& ne) {
    return gguf_recipe_type(recipe, shape, name, ne);
  });
}

// Every matrix (the router too) stored as `type`, vectors as F32.
inline void gguf_add_spec_tensors(gguf_writer& w, const arch_spec& s, const tensor_map& t, gguf_tensor_type type) {
  gguf_add_spec_tensors_typed(w, s, t, [&](const std::string&, const std::vector<std::uint64_t>& ne) {
    return ne.size() >= 2 ? type : gguf_tensor_type::f32;
  });
}

inline void write_spec_gguf(const std::filesystem::path& path, const arch_spec& s, const tensor_map& t,
                            const gguf_recipe& recipe) {
  gguf_writer w;
  gguf_add_spec_metadata(w, s);
  gguf_add_spec_tensors(w, s, t, recipe);
  auto r = w.write(path);
  if (!r) throw std::runtime_error(r.error());
}

inline void write_spec_gguf(const std::filesystem::path& path, const arch_spec& s, const tensor_map& t,
                            gguf_tensor_type type) {
  gguf_writer w;
  gguf_add_spec_metadata(w, s);
  gguf_add_spec_tensors(w, s, t, type);
  auto r = w.write(path);
  if (!r) throw std::runtime_error(r.error());
}

}  // namespace pagedserve::test
