// Writes Hugging Face folders: config.json for a model_config, a llama2.c checkpoint converted to a
// genuine HF Llama, and random-weight folders of any supported architecture.
#include <tbb/parallel_for.h>

#include <charconv>
#include <fstream>

#include "pagedserve/check.hpp"
#include "model/hf_model.hpp"
#include "model/safetensors.hpp"

namespace pagedserve {
namespace {

std::string number(float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back as v
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string_view model_type(const std::string& architecture) {
  if (architecture == "MistralForCausalLM") return "mistral";
  if (architecture == "Qwen2ForCausalLM") return "qwen2";
  if (architecture == "Qwen3ForCausalLM") return "qwen3";
  if (architecture == "Qwen3MoeForCausalLM") return "qwen3_moe";
  return "llama";
}

std::string_view torch_dtype(dtype t) {
  switch (t) {
    case dtype::f32: return "float32";
    case dtype::bf16: return "bfloat16";
    case dtype::f16: return "float16";
    case dtype::i8: return "int8";
    default: break;
  }
  ps_check(false, "safetensors has no ggml block formats (GGUF only)");
  return {};
}

std::expected<void, std::string> write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return std::unexpected(path.string() + ": cannot create");
  out << text;
  out.close();
  if (!out) return std::unexpected(path.string() + ": write failed");
  return {};
}

// One row block of a head-major matrix: row h*hs + j*half + i of the result is row h*hs + 2i + j of
// w (llama2.c's interleaved RoPE pairs -> HF's rotate-half halves). w: [n_heads*hs, cols].
std::vector<float> permute_to_rotate_half(const float* w, int n_heads, int hs, int cols) {
  std::vector<float> out(static_cast<std::size_t>(n_heads) * hs * cols);
  const int half = hs / 2;
  for (int h = 0; h < n_heads; ++h)
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < half; ++i)
        std::copy_n(w + (static_cast<std::size_t>(h) * hs + 2 * i + j) * cols, cols,
                    out.begin() + (static_cast<std::size_t>(h) * hs + j * half + i) * cols);
  return out;
}

}  // namespace

std::string hf_config_json(const model_config& c, dtype stored) {
  const bool moe = c.n_experts > 0;
  std::string j = "{\n";
  auto field = [&j](std::string_view key, const std::string& value) {
    j += "  \"" + std::string(key) + "\": " + value + ",\n";
  };
  field("architectures", "[\"" + c.architecture + "\"]");
  field("model_type", "\"" + std::string(model_type(c.architecture)) + "\"");
  field("hidden_size", std::to_string(c.dim));
  if (c.hidden_dim > 0) field("intermediate_size", std::to_string(c.hidden_dim));
  field("num_hidden_layers", std::to_string(c.n_layers));
  field("num_attention_heads", std::to_string(c.n_heads));
  field("num_key_value_heads", std::to_string(c.n_kv_heads));
  field("head_dim", std::to_string(c.head_size()));
  field("vocab_size", std::to_string(c.vocab_size));
  field("max_position_embeddings", std::to_string(c.seq_len));
  field("rms_norm_eps", number(c.rms_norm_eps));
  field("rope_theta", number(c.rope_theta));
  const rope_scaling_config& s = c.rope_scaling;
  if (s.type == rope_scaling_config::kind::linear)
    field("rope_scaling", "{\"rope_type\": \"linear\", \"factor\": " + number(s.factor) + "}");
  else if (s.type == rope_scaling_config::kind::llama3)
    field("rope_scaling", "{\"rope_type\": \"llama3\", \"factor\": " + number(s.factor) +
                              ", \"low_freq_factor\": " + number(s.low_freq_factor) + ", \"high_freq_factor\": " +
                              number(s.high_freq_factor) + ", \"original_max_position_embeddings\": " +
                              std::to_string(s.original_max_position) + "}");
  else
    field("rope_scaling", "null");
  field("hidden_act", "\"silu\"");
  field("attention_bias", "false");
  if (moe) {
    field("num_experts", std::to_string(c.n_experts));
    field("num_experts_per_tok", std::to_string(c.n_experts_used));
    field("moe_intermediate_size", std::to_string(c.expert_hidden_dim));
    field("norm_topk_prob", c.norm_topk_prob ? "true" : "false");
    field("decoder_sparse_step", "1");
    field("mlp_only_layers", "[]");
  }
  field("torch_dtype", "\"" + std::string(torch_dtype(stored)) + "\"");
  j += "  \"tie_word_embeddings\": " + std::string(c.shared_classifier ? "true" : "false") + "\n}\n";
  return j;
}

std::expected<void, std::string> hf_folder_write_from_llama2c(const std::filesystem::path& checkpoint,
                                                              const std::filesystem::path& out_dir,
                                                              const hf_write_options& options) {
  auto loaded = llama2c_model_load(checkpoint);
  if (!loaded) return std::unexpected(loaded.error());
  const model& m = **loaded;
  model_config c = m.config;
  c.architecture = "LlamaForCausalLM";
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return std::unexpected(out_dir.string() + ": cannot create: " + ec.message());

  const std::int64_t dim = c.dim, hid = c.hidden_dim, vocab = c.vocab_size, qd = c.q_dim(), kvd = c.kv_dim();
  const dtype t = options.type;
  std::vector<std::vector<float>> permuted;  // keeps the permuted Wq/Wk alive until written
  permuted.reserve(2 * c.n_layers);
  std::vector<safetensors_entry> entries;
  entries.push_back(safetensors_entry_from_f32("model.embed_tokens.weight", {vocab, dim}, m.token_embedding.f32(), t));
  for (int l = 0; l < c.n_layers; ++l) {
    const layer_weights& w = m.layers[l];
    const std::string at = "model.layers." + std::to_string(l) + ".";
    permuted.push_back(permute_to_rotate_half(w.wq.f32(), c.n_heads, c.head_size(), c.dim));
    const float* wq = permuted.back().data();
    permuted.push_back(permute_to_rotate_half(w.wk.f32(), c.n_kv_heads, c.head_size(), c.dim));
    const float* wk = permuted.back().data();
    entries.push_back(safetensors_entry_from_f32(at + "input_layernorm.weight", {dim}, w.rms_att, dtype::f32));
    entries.push_back(safetensors_entry_from_f32(at + "self_attn.q_proj.weight", {qd, dim}, wq, t));
    entries.push_back(safetensors_entry_from_f32(at + "self_attn.k_proj.weight", {kvd, dim}, wk, t));
    entries.push_back(safetensors_entry_from_f32(at + "self_attn.v_proj.weight", {kvd, dim}, w.wv.f32(), t));
    entries.push_back(safetensors_entry_from_f32(at + "self_attn.o_proj.weight", {dim, qd}, w.wo.f32(), t));
    entries.push_back(safetensors_entry_from_f32(at + "post_attention_layernorm.weight", {dim}, w.rms_ffn, dtype::f32));
    entries.push_back(safetensors_entry_from_f32(at + "mlp.gate_proj.weight", {hid, dim}, w.w_gate.f32(), t));
    entries.push_back(safetensors_entry_from_f32(at + "mlp.up_proj.weight", {hid, dim}, w.w_up.f32(), t));
    entries.push_back(safetensors_entry_from_f32(at + "mlp.down_proj.weight", {dim, hid}, w.w_down.f32(), t));
  }
  entries.push_back(safetensors_entry_from_f32("model.norm.weight", {dim}, m.rms_final, dtype::f32));
  if (!c.shared_classifier)
    entries.push_back(safetensors_entry_from_f32("lm_head.weight", {vocab, dim}, m.classifier.f32(), t));

  if (auto r = safetensors_write(out_dir / "model.safetensors", entries, {{"format", "pt"}}); !r) return r;
  if (auto r = write_text(out_dir / "config.json", hf_config_json(c, t)); !r) return r;
  // llama2.c's SentencePiece vocabularies: <s> = 1, </s> = 2. The stop ids are the llama2.c loader's
  // (run.c also ends a sequence when it samples BOS), so both loaders serve the weights identically.
  std::string stops;
  for (int id : m.generation.eos_token_ids) stops += (stops.empty() ? "" : ", ") + std::to_string(id);
  return write_text(out_dir / "generation_config.json",
                    "{\n  \"bos_token_id\": 1,\n  \"eos_token_id\": [" + stops + "]\n}\n");
}

namespace {

// Deterministic, fast uniform noise: splitmix64 per element of a (seed, tensor, index) stream.
float noise(std::uint64_t key, std::uint64_t i) {
  std::uint64_t z = key + (i + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;  // [-1, 1)
}

enum class fill_kind { random, ones, zeros };

safetensors_entry random_entry(std::string name, std::vector<std::int64_t> shape, dtype type, fill_kind kind,
                               std::uint64_t key) {
  safetensors_entry e{std::move(name), kind == fill_kind::random ? type : dtype::f32, std::move(shape), {}};
  const dtype stored = e.type;
  e.fill = [stored, kind, key](std::span<std::byte> out) {
    const std::size_t n = out.size() / dtype_size(stored);
    constexpr float scale = 0.0346f;  // uniform(-a, a) with standard deviation 0.02
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 1 << 16), [&](const tbb::blocked_range<std::size_t>& r) {
      for (std::size_t i = r.begin(); i < r.end(); ++i) {
        const float v = kind == fill_kind::random ? scale * noise(key, i) : kind == fill_kind::ones ? 1.0f : 0.0f;
        if (stored == dtype::f32)
          reinterpret_cast<float*>(out.data())[i] = v;
        else
          reinterpret_cast<std::uint16_t*>(out.data())[i] = stored == dtype::bf16 ? f32_to_bf16(v) : f32_to_f16(v);
      }
    });
  };
  return e;
}

}  // namespace

std::expected<void, std::string> hf_folder_write_random(const std::filesystem::path& dir, const model_config& c,
                                                        dtype type, std::uint64_t seed) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return std::unexpected(dir.string() + ": cannot create: " + ec.message());
  const std::int64_t dim = c.dim, hid = c.hidden_dim, vocab = c.vocab_size, qd = c.q_dim(), kvd = c.kv_dim();
  const std::int64_t hs = c.head_size(), eh = c.expert_hidden_dim, n_exp = c.n_experts;
  const bool qwen3 = c.architecture == "Qwen3ForCausalLM" || c.architecture == "Qwen3MoeForCausalLM";
  const bool qkv_bias = c.architecture == "Qwen2ForCausalLM";
  std::uint64_t key = seed * 0x2545f4914f6cdd1dull;
  std::vector<safetensors_entry> entries;
  auto add = [&](std::string name, std::vector<std::int64_t> shape, fill_kind kind) {
    entries.push_back(random_entry(std::move(name), std::move(shape), type, kind, key += 0x9e3779b97f4a7c15ull));
  };
  add("model.embed_tokens.weight", {vocab, dim}, fill_kind::random);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string at = "model.layers." + std::to_string(l) + ".";
    add(at + "input_layernorm.weight", {dim}, fill_kind::ones);
    add(at + "self_attn.q_proj.weight", {qd, dim}, fill_kind::random);
    add(at + "self_attn.k_proj.weight", {kvd, dim}, fill_kind::random);
    add(at + "self_attn.v_proj.weight", {kvd, dim}, fill_kind::random);
    add(at + "self_attn.o_proj.weight", {dim, qd}, fill_kind::random);
    if (qkv_bias) {
      add(at + "self_attn.q_proj.bias", {qd}, fill_kind::zeros);
      add(at + "self_attn.k_proj.bias", {kvd}, fill_kind::zeros);
      add(at + "self_attn.v_proj.bias", {kvd}, fill_kind::zeros);
    }
    if (qwen3) {
      add(at + "self_attn.q_norm.weight", {hs}, fill_kind::ones);
      add(at + "self_attn.k_norm.weight", {hs}, fill_kind::ones);
    }
    add(at + "post_attention_layernorm.weight", {dim}, fill_kind::ones);
    if (n_exp > 0) {
      add(at + "mlp.gate.weight", {n_exp, dim}, fill_kind::random);
      for (int e = 0; e < n_exp; ++e) {
        const std::string ex = at + "mlp.experts." + std::to_string(e) + ".";
        add(ex + "gate_proj.weight", {eh, dim}, fill_kind::random);
        add(ex + "up_proj.weight", {eh, dim}, fill_kind::random);
        add(ex + "down_proj.weight", {dim, eh}, fill_kind::random);
      }
    } else {
      add(at + "mlp.gate_proj.weight", {hid, dim}, fill_kind::random);
      add(at + "mlp.up_proj.weight", {hid, dim}, fill_kind::random);
      add(at + "mlp.down_proj.weight", {dim, hid}, fill_kind::random);
    }
  }
  add("model.norm.weight", {dim}, fill_kind::ones);
  if (!c.shared_classifier) add("lm_head.weight", {vocab, dim}, fill_kind::random);
  if (auto r = safetensors_write(dir / "model.safetensors", entries, {{"format", "pt"}}); !r) return r;
  return write_text(dir / "config.json", hf_config_json(c, type));
}

}  // namespace pagedserve
