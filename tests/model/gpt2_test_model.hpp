#pragma once
// Small random-weight GPT-2 models written by the tests themselves: a spec, its config.json (GPT2Config's
// keys, hand-written), its tensors by transformers' GPT2LMHeadModel names (Conv1D weights [in, out]),
// the safetensors folder (written here, byte by byte, with the causal-mask buffers older files carry),
// and the GGUF file llama.cpp's converter would make of it.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/gguf_test_model.hpp"
#include "model/hf_test_model.hpp"
#include "model/gguf_writer.hpp"

namespace pagedserve::test {

struct gpt2_spec {
  std::string name;  // test label
  int dim = 32, layers = 2, heads = 4, vocab = 97, positions = 24;
  int inner = 0;  // n_inner; 0 writes null (4 * n_embd)
  double eps = 1e-5;
  bool tied = true;           // tie_word_embeddings (left out of config.json when true: GPT-2's default)
  bool prefixed = true;       // `transformer.` before every name but lm_head (save_pretrained's layout)
  bool mask_buffers = false;  // h.N.attn.bias (BOOL) and h.N.attn.masked_bias, as older files have them
  std::string activation = "gelu_new";
  int bos = 1, eos = 2;  // bos_token_id, eos_token_id of config.json and generation_config.json
  std::string extra_json;  // appended to config.json's object (", \"key\": value"): keys not written above

  int hidden() const { return inner > 0 ? inner : 4 * dim; }
  int hd() const { return dim / heads; }
};

// gtest prints a parameter by its name, not its bytes.
inline void PrintTo(const gpt2_spec& s, std::ostream* os) { *os << s.name; }

inline std::string gpt2_config_json(const gpt2_spec& s) {
  std::string j = "{\"architectures\": [\"GPT2LMHeadModel\"], \"model_type\": \"gpt2\", \"n_embd\": " +
                  std::to_string(s.dim) + ", \"n_layer\": " + std::to_string(s.layers) +
                  ", \"n_head\": " + std::to_string(s.heads) + ", \"n_positions\": " + std::to_string(s.positions) +
                  ", \"n_ctx\": " + std::to_string(s.positions) +
                  ", \"n_inner\": " + (s.inner > 0 ? std::to_string(s.inner) : std::string("null")) +
                  ", \"vocab_size\": " + std::to_string(s.vocab) + ", \"layer_norm_epsilon\": " + std::to_string(s.eps) +
                  ", \"activation_function\": \"" + s.activation + "\"" +
                  ", \"attn_pdrop\": 0.1, \"resid_pdrop\": 0.1, \"bos_token_id\": " + std::to_string(s.bos) +
                  ", \"eos_token_id\": " + std::to_string(s.eos);
  if (!s.tied) j += ", \"tie_word_embeddings\": false";
  return j + s.extra_json + "}";
}

// Random weights under the unprefixed names, rounded to `type`'s values.
inline tensor_map gpt2_random_tensors(const gpt2_spec& s, dtype type, std::uint32_t seed) {
  std::mt19937 rng(seed);
  tensor_map m;
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape, float lo, float hi) {
    add_random_tensor(m, rng, type, name, std::move(shape), lo, hi);
  };
  auto conv1d = [&](const std::string& name, int in, int out) {  // Conv1D: weight [in, out], bias [out]
    const float a = 1.5f / std::sqrt(static_cast<float>(in));
    add(name + ".weight", {in, out}, -a, a);
    add(name + ".bias", {out}, -0.3f, 0.3f);
  };
  auto layer_norm = [&](const std::string& name) {
    add(name + ".weight", {s.dim}, 0.8f, 1.2f);
    add(name + ".bias", {s.dim}, -0.2f, 0.2f);
  };
  add("wte.weight", {s.vocab, s.dim}, -1.0f, 1.0f);
  add("wpe.weight", {s.positions, s.dim}, -0.5f, 0.5f);
  for (int l = 0; l < s.layers; ++l) {
    const std::string at = "h." + std::to_string(l) + ".";
    layer_norm(at + "ln_1");
    conv1d(at + "attn.c_attn", s.dim, 3 * s.dim);
    conv1d(at + "attn.c_proj", s.dim, s.dim);
    layer_norm(at + "ln_2");
    conv1d(at + "mlp.c_fc", s.dim, s.hidden());
    conv1d(at + "mlp.c_proj", s.hidden(), s.dim);
  }
  layer_norm("ln_f");
  if (!s.tied) add("lm_head.weight", {s.vocab, s.dim}, -0.5f, 0.5f);
  return m;
}

namespace detail {

// One safetensors file, written here without the library: header JSON, then each tensor's bytes.
struct raw_tensor {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;
};

inline std::string raw_bytes(const std::vector<float>& values, dtype type) {
  std::string out;
  for (float v : values) {
    if (type == dtype::f32) {
      out.append(reinterpret_cast<const char*>(&v), 4);
    } else {
      const std::uint16_t h = type == dtype::bf16 ? f32_to_bf16(v) : f32_to_f16(v);
      out.append(reinterpret_cast<const char*>(&h), 2);
    }
  }
  return out;
}

inline void write_raw_safetensors(const std::filesystem::path& path, const std::vector<raw_tensor>& tensors) {
  std::string header = "{\"__metadata__\": {\"format\": \"pt\"}";
  std::size_t offset = 0;
  for (const raw_tensor& t : tensors) {
    header += ", \"" + t.name + "\": {\"dtype\": \"" + t.dtype + "\", \"shape\": [";
    for (std::size_t i = 0; i < t.shape.size(); ++i) header += (i ? ", " : "") + std::to_string(t.shape[i]);
    header += "], \"data_offsets\": [" + std::to_string(offset) + ", " + std::to_string(offset + t.bytes.size()) + "]}";
    offset += t.bytes.size();
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header;
  for (const raw_tensor& t : tensors) out << t.bytes;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace detail

// config.json and model.safetensors (plus generation_config.json) in dir.
inline void write_gpt2_folder(const std::filesystem::path& dir, const gpt2_spec& s, const tensor_map& tensors, dtype type) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << gpt2_config_json(s);
  std::ofstream(dir / "generation_config.json")
      << "{\"bos_token_id\": " << s.bos << ", \"eos_token_id\": " << s.eos << "}";
  const std::string prefix = s.prefixed ? "transformer." : "";
  const std::string type_name = type == dtype::f32 ? "F32" : type == dtype::bf16 ? "BF16" : "F16";
  std::vector<detail::raw_tensor> out;
  for (const auto& [name, t] : tensors)
    out.push_back({name == "lm_head.weight" ? name : prefix + name, type_name, t.shape, detail::raw_bytes(t.values, type)});
  if (s.mask_buffers)
    for (int l = 0; l < s.layers; ++l) {
      const std::string at = prefix + "h." + std::to_string(l) + ".attn.";
      std::string tril(static_cast<std::size_t>(s.positions) * s.positions, '\0');
      for (int i = 0; i < s.positions; ++i)
        for (int j = 0; j <= i; ++j) tril[static_cast<std::size_t>(i) * s.positions + j] = 1;
      out.push_back({at + "bias", "BOOL", {1, 1, s.positions, s.positions}, tril});
      out.push_back({at + "masked_bias", "F32", {}, detail::raw_bytes({-1e4f}, dtype::f32)});
    }
  detail::write_raw_safetensors(dir / "model.safetensors", out);
}

// The [in, out] Conv1D matrix `t`'s columns [c0, c0 + n) as [n, in] rows (what the converter stores).
inline std::vector<float> conv1d_rows(const test_tensor& t, int c0, int n) {
  const int in = static_cast<int>(t.shape[0]), out = static_cast<int>(t.shape[1]);
  std::vector<float> rows(static_cast<std::size_t>(n) * in);
  for (int o = 0; o < n; ++o)
    for (int i = 0; i < in; ++i) rows[static_cast<std::size_t>(o) * in + i] = t.values[static_cast<std::size_t>(i) * out + c0 + o];
  return rows;
}

// The values a GGUF of `type` written by gguf_add_gpt2 holds, under the HF names: every matrix rounded
// (F16) or quantized and dequantized (Q8_0, Q4_0: gguf_test_model.hpp's ggml formulas) along the rows
// the file stores, i.e. along `in` for the transposed Conv1D weights. Vectors stay as they are.
inline tensor_map gpt2_gguf_stored_values(tensor_map t, gguf_tensor_type type) {
  auto round_rows = [&](std::vector<float>& rows) {
    if (type == gguf_tensor_type::q8_0) q8_0_round_trip(rows.data(), rows.size());
    if (type == gguf_tensor_type::q4_0) q4_0_round_trip(rows.data(), rows.size());
    if (type == gguf_tensor_type::f16)
      for (float& v : rows) v = f16_to_f32(f32_to_f16(v));
  };
  for (auto& [name, x] : t) {
    if (x.shape.size() != 2) continue;
    const bool conv = name.ends_with("c_attn.weight") || name.ends_with("c_proj.weight") || name.ends_with("c_fc.weight");
    if (!conv) {
      round_rows(x.values);
      continue;
    }
    const int in = static_cast<int>(x.shape[0]), out = static_cast<int>(x.shape[1]);
    std::vector<float> rows = conv1d_rows(x, 0, out);  // [out, in]
    round_rows(rows);
    for (int o = 0; o < out; ++o)
      for (int i = 0; i < in; ++i) x.values[static_cast<std::size_t>(i) * out + o] = rows[static_cast<std::size_t>(o) * in + i];
  }
  return t;
}

// The GGUF llama.cpp's convert_hf_to_gguf.py writes for this GPT-2 (gpt2 arch, Conv1D weights transposed
// to ggml's [out, in] rows, c_attn kept fused as attn_qkv, output.weight written even when tied unless
// `tied_output` is false); matrices as `type`, vectors F32. No tokenizer: the caller may add one.
inline void gguf_add_gpt2(gguf_writer& w, const gpt2_spec& s, const tensor_map& t, gguf_tensor_type type,
                          bool tied_output = true) {
  w.add_string("general.architecture", "gpt2");
  w.add_string("general.name", "test-" + s.name);
  w.add_u32("gpt2.context_length", static_cast<std::uint32_t>(s.positions));
  w.add_u32("gpt2.embedding_length", static_cast<std::uint32_t>(s.dim));
  w.add_u32("gpt2.feed_forward_length", static_cast<std::uint32_t>(s.hidden()));
  w.add_u32("gpt2.block_count", static_cast<std::uint32_t>(s.layers));
  w.add_u32("gpt2.attention.head_count", static_cast<std::uint32_t>(s.heads));
  w.add_f32("gpt2.attention.layer_norm_epsilon", static_cast<float>(s.eps));
  w.add_u32("tokenizer.ggml.bos_token_id", static_cast<std::uint32_t>(s.bos));
  w.add_u32("tokenizer.ggml.eos_token_id", static_cast<std::uint32_t>(s.eos));
  auto matrix = [&](const std::string& name, int rows, int cols, const std::vector<float>& values) {
    w.add_tensor(name, {static_cast<std::uint64_t>(cols), static_cast<std::uint64_t>(rows)}, type, values);
  };
  auto vec = [&](const std::string& name, const std::string& from) {
    const test_tensor& x = t.at(from);
    w.add_tensor(name, {static_cast<std::uint64_t>(x.values.size())}, gguf_tensor_type::f32, x.values);
  };
  auto conv = [&](const std::string& name, const std::string& from) {
    const test_tensor& x = t.at(from);
    const int in = static_cast<int>(x.shape[0]), out = static_cast<int>(x.shape[1]);
    matrix(name, out, in, conv1d_rows(x, 0, out));
  };
  auto embedding = [&](const std::string& name, const std::string& from) {  // rows as the tensor has them
    const test_tensor& x = t.at(from);
    matrix(name, static_cast<int>(x.shape[0]), static_cast<int>(x.shape[1]), x.values);
  };
  embedding("token_embd.weight", "wte.weight");
  embedding("position_embd.weight", "wpe.weight");
  for (int l = 0; l < s.layers; ++l) {
    const std::string hf = "h." + std::to_string(l) + ".", at = "blk." + std::to_string(l) + ".";
    vec(at + "attn_norm.weight", hf + "ln_1.weight");
    vec(at + "attn_norm.bias", hf + "ln_1.bias");
    conv(at + "attn_qkv.weight", hf + "attn.c_attn.weight");
    vec(at + "attn_qkv.bias", hf + "attn.c_attn.bias");
    conv(at + "attn_output.weight", hf + "attn.c_proj.weight");
    vec(at + "attn_output.bias", hf + "attn.c_proj.bias");
    vec(at + "ffn_norm.weight", hf + "ln_2.weight");
    vec(at + "ffn_norm.bias", hf + "ln_2.bias");
    conv(at + "ffn_up.weight", hf + "mlp.c_fc.weight");
    vec(at + "ffn_up.bias", hf + "mlp.c_fc.bias");
    conv(at + "ffn_down.weight", hf + "mlp.c_proj.weight");
    vec(at + "ffn_down.bias", hf + "mlp.c_proj.bias");
  }
  vec("output_norm.weight", "ln_f.weight");
  vec("output_norm.bias", "ln_f.bias");
  if (!s.tied) matrix("output.weight", s.vocab, s.dim, t.at("lm_head.weight").values);
  else if (tied_output) matrix("output.weight", s.vocab, s.dim, t.at("wte.weight").values);
}

inline void write_gpt2_gguf(const std::filesystem::path& path, const gpt2_spec& s, const tensor_map& t,
                            gguf_tensor_type type, bool tied_output = true) {
  gguf_writer w;
  gguf_add_gpt2(w, s, t, type, tied_output);
  auto r = w.write(path);
  if (!r) throw std::runtime_error(r.error());
}

}  // namespace pagedserve::test
