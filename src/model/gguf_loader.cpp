// Builds a model from a GGUF file: `<arch>.*` metadata gives the shape, llama.cpp's tensor names
// (token_embd, blk.N.attn_q, ...) give the weights, each checked against the shape it must have.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <spdlog/spdlog.h>

#include "model/block_loader.hpp"
#include "model/block_panels_load.hpp"
#include "model/load_phase.hpp"
#include "model/ps_try.hpp"
#include "model/ggml_blocks.hpp"
#include "model/gguf_model.hpp"
#include "model/mapped_file.hpp"

namespace pagedserve {
namespace {

enum class family { llama, qwen2, qwen2moe, qwen3, qwen3moe, gpt2 };

struct gguf_arch {
  model_config config;
  family arch = family::llama;
};

std::expected<family, std::string> family_of(std::string_view name) {
  if (name == "llama") return family::llama;
  if (name == "qwen2") return family::qwen2;
  if (name == "qwen2moe") return family::qwen2moe;
  if (name == "qwen3") return family::qwen3;
  if (name == "qwen3moe") return family::qwen3moe;
  if (name == "gpt2") return family::gpt2;
  return std::unexpected("general.architecture '" + std::string(name) +
                         "' is not supported (supported: llama, qwen2, qwen2moe, qwen3, qwen3moe, gpt2)");
}

// A required dimension: a positive integer below 2^24.
std::expected<int, std::string> dim_of(const gguf_file& f, const std::string& key) {
  auto v = f.get_uint(key);
  if (!v) return std::unexpected(v.error());
  if (*v == 0 || *v > (1u << 24)) return std::unexpected(f.name() + ": " + key + " is out of range: " + std::to_string(*v));
  return static_cast<int>(*v);
}

std::expected<int, std::string> dim_or(const gguf_file& f, const std::string& key, int fallback) {
  return f.find(key) ? dim_of(f, key) : std::expected<int, std::string>(fallback);
}

std::expected<double, std::string> number_or(const gguf_file& f, const std::string& key, double fallback) {
  return f.find(key) ? f.get_float(key) : std::expected<double, std::string>(fallback);
}

// {arch}.expert_count and expert_used_count, the second no larger than the first.
std::expected<void, std::string> read_expert_counts(const gguf_file& f, const std::string& p, model_config& c) {
  PS_TRY(c.n_experts, dim_of(f, p + "expert_count"));
  PS_TRY(c.n_experts_used, dim_of(f, p + "expert_used_count"));
  if (c.n_experts_used > c.n_experts) return std::unexpected(f.name() + ": expert_used_count exceeds expert_count");
  return {};
}

// {arch}.rope.scaling.*, as convert_hf_to_gguf.py writes HF's rope_scaling: linear (positions /
// factor) or YaRN (Qwen's long-context files): the ramp between beta_fast and beta_slow rotations over
// original_context_length (llama.cpp's default: the context length), cos / sin scaled by HF's
// attention_factor (yarn_attn_factor), else 0.1 ln(factor) + 1 (over the same with
// yarn_log_multiplier, HF's mscale_all_dim), times attn_factor as llama.cpp applies it. (llama.cpp
// ignores yarn_attn_factor on Llama/Qwen files; HF's definition of the model wins here.)
std::expected<void, std::string> read_rope_scaling(const gguf_file& f, const std::string& p, model_config& c) {
  auto fail = [&](const std::string& what) { return std::unexpected(f.name() + ": " + p + "rope.scaling." + what); };
  if (!f.find(p + "rope.scaling.type")) return {};
  std::string_view type;
  PS_TRY(type, f.get_string(p + "rope.scaling.type"));
  if (type == "none") return {};
  if (type != "linear" && type != "yarn") return fail("type '" + std::string(type) + "' is not supported (none, linear, yarn)");
  double factor = 0.0;
  PS_TRY(factor, f.get_float(p + "rope.scaling.factor"));
  if (!(factor > 0.0)) return fail("factor must be positive");
  rope_scaling_config& s = c.rope_scaling;
  s.factor = static_cast<float>(factor);
  if (type == "linear") {
    s.type = rope_scaling_config::kind::linear;
    return {};
  }
  s.type = rope_scaling_config::kind::yarn;
  PS_TRY(s.original_max_position, dim_or(f, p + "rope.scaling.original_context_length", c.seq_len));
  double beta_fast = 0.0, beta_slow = 0.0, ext_factor = 0.0, log_mul = 0.0, attn_factor = 0.0, yarn_attn = 0.0;
  PS_TRY(beta_fast, number_or(f, p + "rope.scaling.yarn_beta_fast", 32.0));
  PS_TRY(beta_slow, number_or(f, p + "rope.scaling.yarn_beta_slow", 1.0));
  PS_TRY(ext_factor, number_or(f, p + "rope.scaling.yarn_ext_factor", -1.0));
  PS_TRY(log_mul, number_or(f, p + "rope.scaling.yarn_log_multiplier", 0.0));
  PS_TRY(attn_factor, number_or(f, p + "rope.scaling.attn_factor", 1.0));
  PS_TRY(yarn_attn, number_or(f, p + "rope.scaling.yarn_attn_factor", 0.0));
  if (!(beta_fast > 0.0) || !(beta_slow > 0.0)) return fail("yarn_beta_fast and yarn_beta_slow must be positive");
  // Negative is llama.cpp's "not set" (1 for YaRN); other mixes of extrapolation have no HF counterpart.
  if (ext_factor >= 0.0 && ext_factor != 1.0) return fail("yarn_ext_factor other than 1 is not supported");
  if (!(attn_factor > 0.0)) return fail("attn_factor must be positive");
  s.beta_fast = static_cast<float>(beta_fast), s.beta_slow = static_cast<float>(beta_slow);
  const auto mscale = [&](double m) { return factor <= 1.0 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; };
  const double scale = yarn_attn > 0.0 ? yarn_attn : log_mul != 0.0 ? mscale(1.0) / mscale(log_mul) : mscale(1.0);
  s.attention_factor = static_cast<float>(scale * attn_factor);
  return {};
}

// The vocabulary size is token_embd's row count; no output.weight means a tied classifier.
std::expected<gguf_arch, std::string> vocab_of(const gguf_file& f, gguf_arch a) {
  const gguf_tensor_info* embd = f.tensor("token_embd.weight");
  if (!embd || embd->ne.size() != 2) return std::unexpected(f.name() + ": missing or non-matrix tensor 'token_embd.weight'");
  if (embd->ne[1] > (1u << 24)) return std::unexpected(f.name() + ": token_embd.weight has too many rows");
  a.config.vocab_size = static_cast<int>(embd->ne[1]);
  a.config.shared_classifier = f.tensor("output.weight") == nullptr;
  return a;
}

// llama.cpp's gpt2: LayerNorm (attention.layer_norm_epsilon), a GELU MLP, learned positions; no RoPE keys.
std::expected<void, std::string> read_gpt2_config(const gguf_file& f, model_config& c) {
  auto fail = [&](const std::string& what) { return std::unexpected(f.name() + ": " + what); };
  PS_TRY(c.dim, dim_of(f, "gpt2.embedding_length"));
  PS_TRY(c.n_layers, dim_of(f, "gpt2.block_count"));
  PS_TRY(c.n_heads, dim_of(f, "gpt2.attention.head_count"));
  PS_TRY(c.n_kv_heads, dim_or(f, "gpt2.attention.head_count_kv", c.n_heads));
  PS_TRY(c.seq_len, dim_of(f, "gpt2.context_length"));
  PS_TRY(c.hidden_dim, dim_of(f, "gpt2.feed_forward_length"));
  if (c.n_kv_heads != c.n_heads) return fail("gpt2.attention.head_count_kv differs from head_count (GPT-2 has none)");
  if (c.dim % c.n_heads != 0) return fail("gpt2.attention.head_count does not divide embedding_length");
  double eps = 0.0;
  PS_TRY(eps, f.get_float("gpt2.attention.layer_norm_epsilon"));
  if (!(eps >= 0.0)) return fail("gpt2.attention.layer_norm_epsilon is negative");
  c.rms_norm_eps = static_cast<float>(eps);
  c.norm = norm_kind::layer;
  c.ffn = ffn_kind::gelu_tanh;
  c.positions = position_kind::learned;
  return {};
}

std::expected<gguf_arch, std::string> read_config(const gguf_file& f) {
  gguf_arch a;
  model_config& c = a.config;
  std::string_view name;
  PS_TRY(name, f.get_string("general.architecture"));
  auto fam = family_of(name);
  if (!fam) return std::unexpected(f.name() + ": " + fam.error());
  a.arch = *fam;
  c.architecture = std::string(name);  // GGUF's name: llama, qwen2, qwen2moe, qwen3, qwen3moe
  const std::string p = std::string(name) + ".";
  auto fail = [&](const std::string& what) { return std::unexpected(f.name() + ": " + what); };
  if (a.arch == family::gpt2) {
    if (auto r = read_gpt2_config(f, c); !r) return std::unexpected(r.error());
    return vocab_of(f, a);
  }
  PS_TRY(c.dim, dim_of(f, p + "embedding_length"));
  PS_TRY(c.n_layers, dim_of(f, p + "block_count"));
  PS_TRY(c.n_heads, dim_of(f, p + "attention.head_count"));
  PS_TRY(c.n_kv_heads, dim_or(f, p + "attention.head_count_kv", c.n_heads));
  PS_TRY(c.seq_len, dim_of(f, p + "context_length"));
  PS_TRY(c.head_dim, dim_or(f, p + "attention.key_length", 0));
  int value_length = 0;
  PS_TRY(value_length, dim_or(f, p + "attention.value_length", c.head_size()));
  if (c.n_heads % c.n_kv_heads != 0) return fail("head_count_kv does not divide head_count");
  if (c.head_dim == 0 && c.dim % c.n_heads != 0) return fail("head_count does not divide embedding_length");
  if (c.head_size() % 2 != 0) return fail("head size " + std::to_string(c.head_size()) + " is odd (RoPE needs pairs)");
  if (value_length != c.head_size()) return fail("attention.value_length differs from key_length (not supported)");
  int rope_dims = 0;
  PS_TRY(rope_dims, dim_or(f, p + "rope.dimension_count", c.head_size()));
  if (rope_dims != c.head_size()) return fail("partial rotary embeddings (rope.dimension_count < head size) are not supported");

  double num = 0.0;
  PS_TRY(num, f.get_float(p + "attention.layer_norm_rms_epsilon"));
  c.rms_norm_eps = static_cast<float>(num);
  num = 10000.0;
  if (f.find(p + "rope.freq_base")) PS_TRY(num, f.get_float(p + "rope.freq_base"));
  c.rope_theta = static_cast<float>(num);
  if (c.rope_theta <= 1.0f || c.rms_norm_eps < 0.0f) return fail("rope.freq_base or layer_norm_rms_epsilon out of range");
  if (auto r = read_rope_scaling(f, p, c); !r) return std::unexpected(r.error());
  // llama.cpp's converter stores llama-arch Q/K rows permuted into interleaved pairs (its
  // LlamaModel.permute), and runs the model with interleaved RoPE; Qwen keeps HF's rotate-half rows.
  c.rope = a.arch == family::llama ? kernels::rope_style::interleaved : kernels::rope_style::neox;

  auto with_vocab = vocab_of(f, a);
  if (!with_vocab) return with_vocab;
  a = *with_vocab;

  if (a.arch == family::qwen3moe) {
    if (auto r = read_expert_counts(f, p, c); !r) return std::unexpected(r.error());
    PS_TRY(c.expert_hidden_dim, dim_of(f, p + "expert_feed_forward_length"));
    c.norm_topk_prob = true;  // llama.cpp's qwen3moe graph always renormalises the top-k weights
    if (f.find(p + "expert_weights_norm")) PS_TRY(c.norm_topk_prob, f.get_bool(p + "expert_weights_norm"));
    if (f.find(p + "feed_forward_length")) PS_TRY(c.hidden_dim, dim_of(f, p + "feed_forward_length"));
  } else if (a.arch == family::qwen2moe) {
    // Qwen1.5-MoE / Qwen2-MoE: qwen2 attention; top-k of a softmax router, not renormalised (llama.cpp's
    // qwen2moe graph, HF's norm_topk_prob default), plus a shared expert every token runs, gated by
    // sigmoid(ffn_gate_inp_shexp x). Layers without a router are dense (feed_forward_length).
    if (auto r = read_expert_counts(f, p, c); !r) return std::unexpected(r.error());
    PS_TRY(c.hidden_dim, dim_of(f, p + "feed_forward_length"));
    PS_TRY(c.expert_hidden_dim, dim_or(f, p + "expert_feed_forward_length", c.hidden_dim));
    PS_TRY(c.shared_expert_hidden_dim, dim_or(f, p + "expert_shared_feed_forward_length", c.hidden_dim));
    if (f.find(p + "expert_weights_norm")) PS_TRY(c.norm_topk_prob, f.get_bool(p + "expert_weights_norm"));
  } else if (a.arch == family::llama && f.find(p + "expert_count") && f.get_uint(p + "expert_count").value_or(0) > 0) {
    // Mixtral (and mergekit's MoE merges): llama blocks whose MLP is experts of feed_forward_length
    // (or expert_feed_forward_length), softmax router, top-k weights renormalised as llama.cpp's graph does.
    if (auto r = read_expert_counts(f, p, c); !r) return std::unexpected(r.error());
    PS_TRY(c.hidden_dim, dim_of(f, p + "feed_forward_length"));
    PS_TRY(c.expert_hidden_dim, dim_or(f, p + "expert_feed_forward_length", c.hidden_dim));
    c.norm_topk_prob = true;
  } else {
    PS_TRY(c.hidden_dim, dim_of(f, p + "feed_forward_length"));
  }
  return a;
}

// Looks tensors up by their llama.cpp names and turns them into weight views into the mapping, zero
// copy, of whatever type each tensor has (F32/F16/BF16 or one of ggml's block formats, mixed per
// tensor as llama.cpp's _M/_S recipes mix them); model_convert_weights re-stores them afterwards when
// --quantize asks. Norms and biases become fp32 vectors.
class tensor_source {
 public:
  tensor_source(const gguf_file& f, model& m) : f_(f), m_(m) {}

  bool has(const std::string& name) const { return f_.tensor(name) != nullptr; }

  std::expected<weight, std::string> matrix(const std::string& name, int rows, int cols) {
    auto t = find(name, {static_cast<std::uint64_t>(cols), static_cast<std::uint64_t>(rows)});
    if (!t) return std::unexpected(t.error());
    return matrix_at(**t, 0, rows, cols);
  }

  // Rows [row0, row0 + rows) of a [n_rows, cols] matrix (a fused tensor's part: GPT-2's attn_qkv).
  std::expected<weight, std::string> matrix_rows(const std::string& name, int n_rows, int row0, int rows, int cols) {
    auto t = find(name, {static_cast<std::uint64_t>(cols), static_cast<std::uint64_t>(n_rows)});
    if (!t) return std::unexpected(t.error());
    return matrix_at(**t, row0, rows, cols);
  }

  // Expert e's [rows, cols] slice of a 3-D [n_experts, rows, cols] tensor (ffn_*_exps).
  std::expected<weight, std::string> expert(const std::string& name, int e, int n_experts, int rows, int cols) {
    auto t = find(name, {static_cast<std::uint64_t>(cols), static_cast<std::uint64_t>(rows),
                         static_cast<std::uint64_t>(n_experts)});
    if (!t) return std::unexpected(t.error());
    return matrix_at(**t, static_cast<std::size_t>(e) * rows, rows, cols);
  }

  std::expected<const float*, std::string> vector(const std::string& name, int n) {
    auto t = find(name, {static_cast<std::uint64_t>(n)});
    if (!t) return std::unexpected(t.error());
    auto row = matrix_at(**t, 0, 1, n);
    if (!row) return std::unexpected(row.error());
    std::vector<float> v(n);
    weight_row_to_f32(v.data(), *row, 0);
    return m_.keep(std::move(v));
  }

 private:
  std::expected<const gguf_tensor_info*, std::string> find(const std::string& name,
                                                           const std::vector<std::uint64_t>& ne) const {
    const gguf_tensor_info* t = f_.tensor(name);
    if (!t) return std::unexpected("missing tensor '" + name + "' (" + m_.config.architecture + " needs it)");
    if (t->ne != ne) return std::unexpected("tensor '" + name + "' has dimensions " + dims(t->ne) + ", expected " + dims(ne));
    return t;
  }

  static std::string dims(const std::vector<std::uint64_t>& ne) {
    std::string s = "[";
    for (std::size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
  }

  // The dtype of t's elements: F32, F16, BF16 or a block format whose blocks tile each row.
  static std::expected<dtype, std::string> stored_type(const gguf_tensor_info& t) {
    const std::string name = gguf_tensor_type_name(t.type);
    const std::optional<dtype> type = dtype_of_ggml_type(t.type);
    if (!type || !t.n_bytes)
      return std::unexpected("tensor '" + t.name + "' has " +
                             (name.starts_with("type ") ? "unknown ggml type " : name + ", ggml type ") +
                             std::to_string(t.type) +
                             ", which is not supported (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, "
                             "Q5_K, Q6_K, IQ4_NL and IQ4_XS are)");
    const int block = block_layout_of(*type).elements;
    if (block > 0 && t.ne[0] % static_cast<std::uint64_t>(block) != 0)
      return std::unexpected("tensor '" + t.name + "' is " + name + " with rows of " + std::to_string(t.ne[0]) +
                             " weights, not a whole number of its " + std::to_string(block) + "-weight blocks");
    return *type;
  }

  // Rows [row0, row0 + rows) of t as a view into the mapping.
  std::expected<weight, std::string> matrix_at(const gguf_tensor_info& t, std::size_t row0, int rows, int cols) {
    auto type = stored_type(t);
    if (!type) return std::unexpected(type.error());
    const std::size_t element = dtype_size(*type);
    const std::size_t row_bytes = element ? cols * element : block_row_bytes(*type, cols);
    const std::byte* data = t.data + row0 * row_bytes;
    // The data section is aligned, so this only copies in a file with a stray alignment of 1 (blocks
    // are read bytewise and need none).
    if (element && reinterpret_cast<std::uintptr_t>(data) % element != 0) {
      std::byte* copy = m_.keep(std::vector<std::byte>(static_cast<std::size_t>(rows) * row_bytes));
      std::memcpy(copy, data, static_cast<std::size_t>(rows) * row_bytes);
      data = copy;
    }
    return weight{data, *type, rows, cols};
  }

  const gguf_file& f_;
  model& m_;
};

std::expected<void, std::string> load_layer(tensor_source& src, const model_config& c, int l, layer_weights& w) {
  const std::string at = "blk." + std::to_string(l) + ".";
  const llama_block_names n{
      .attn_norm = at + "attn_norm.weight", .wq = at + "attn_q.weight", .wk = at + "attn_k.weight",
      .wv = at + "attn_v.weight", .wo = at + "attn_output.weight", .bq = at + "attn_q.bias",
      .bk = at + "attn_k.bias", .bv = at + "attn_v.bias", .bo = at + "attn_output.bias",
      .q_norm = at + "attn_q_norm.weight", .k_norm = at + "attn_k_norm.weight", .ffn_norm = at + "ffn_norm.weight",
      .gate = at + "ffn_gate.weight", .up = at + "ffn_up.weight", .down = at + "ffn_down.weight"};
  // Optional parts are loaded when the file has them (Qwen2's q/k/v biases, Llama's attention_bias).
  const llama_block_parts parts{
      .qkv_bias = src.has(n.bq),
      .o_bias = src.has(n.bo),
      .qk_norm = src.has(n.q_norm) || c.architecture == "qwen3" || c.architecture == "qwen3moe"};
  if (auto r = llama_block_attention_load(src, c, n, parts, w); !r) return r;
  if (!src.has(at + "ffn_gate_inp.weight")) return llama_block_dense_ffn_load(src, c, n, w);
  if (c.n_experts == 0) return std::unexpected("tensor '" + at + "ffn_gate_inp.weight' in a model without experts");
  const int eh = c.expert_hidden_dim, ne = c.n_experts, dim = c.dim;
  PS_TRY(w.router, src.matrix(at + "ffn_gate_inp.weight", ne, dim));
  w.experts.resize(ne);
  if (c.shared_expert_hidden_dim > 0) {  // Qwen2-MoE's shared expert, its gate a [dim] vector
    const int sh = c.shared_expert_hidden_dim;
    PS_TRY(w.shared_expert.gate, src.matrix(at + "ffn_gate_shexp.weight", sh, dim));
    PS_TRY(w.shared_expert.up, src.matrix(at + "ffn_up_shexp.weight", sh, dim));
    PS_TRY(w.shared_expert.down, src.matrix(at + "ffn_down_shexp.weight", dim, sh));
    const float* gate = nullptr;
    PS_TRY(gate, src.vector(at + "ffn_gate_inp_shexp.weight", dim));
    w.shared_expert_gate.data = gate, w.shared_expert_gate.type = dtype::f32;
    w.shared_expert_gate.rows = 1, w.shared_expert_gate.cols = dim;
  }
  // One 3-D tensor a projection, or (Mixtral files converted before April 2024) a matrix an expert.
  const bool stacked = src.has(at + "ffn_gate_exps.weight");
  for (int e = 0; e < ne; ++e) {
    const std::string one = "." + std::to_string(e) + ".weight";
    expert_weights& x = w.experts[e];
    if (stacked) {
      PS_TRY(x.gate, src.expert(at + "ffn_gate_exps.weight", e, ne, eh, dim));
      PS_TRY(x.up, src.expert(at + "ffn_up_exps.weight", e, ne, eh, dim));
      PS_TRY(x.down, src.expert(at + "ffn_down_exps.weight", e, ne, dim, eh));
    } else {
      PS_TRY(x.gate, src.matrix(at + "ffn_gate" + one, eh, dim));
      PS_TRY(x.up, src.matrix(at + "ffn_up" + one, eh, dim));
      PS_TRY(x.down, src.matrix(at + "ffn_down" + one, dim, eh));
    }
  }
  return {};
}

// GPT-2's block: fused QKV rows [q | k | v] of [3 dim, dim] (llama.cpp's converter transposed HF's
// Conv1D already), LayerNorm biases, a plain MLP with biases.
std::expected<void, std::string> load_gpt2_layer(tensor_source& src, const model_config& c, int l, layer_weights& w) {
  const std::string at = "blk." + std::to_string(l) + ".";
  const gpt2_block_names n{
      .attn_norm = at + "attn_norm.weight", .attn_norm_bias = at + "attn_norm.bias", .qkv = at + "attn_qkv.weight",
      .qkv_bias = at + "attn_qkv.bias", .wo = at + "attn_output.weight", .bo = at + "attn_output.bias",
      .ffn_norm = at + "ffn_norm.weight", .ffn_norm_bias = at + "ffn_norm.bias", .up = at + "ffn_up.weight",
      .b_up = at + "ffn_up.bias", .down = at + "ffn_down.weight", .b_down = at + "ffn_down.bias"};
  const auto rows = [&src](const std::string& name, int n_rows, int row0, int count, int cols) {
    return src.matrix_rows(name, n_rows, row0, count, cols);
  };
  return gpt2_block_load(src, rows, c, n, w);
}

std::expected<void, std::string> load_tensors(const gguf_file& f, model& m) {
  const model_config& c = m.config;
  tensor_source src(f, m);
  const bool gpt2 = c.positions == position_kind::learned;
  PS_TRY(m.token_embedding, src.matrix("token_embd.weight", c.vocab_size, c.dim));
  if (gpt2) PS_TRY(m.position_embedding, src.matrix("position_embd.weight", c.seq_len, c.dim));
  m.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l)
    if (auto r = gpt2 ? load_gpt2_layer(src, c, l, m.layers[l]) : load_layer(src, c, l, m.layers[l]); !r) return r;
  PS_TRY(m.rms_final, src.vector("output_norm.weight", c.dim));
  if (gpt2) PS_TRY(m.final_norm_bias, src.vector("output_norm.bias", c.dim));
  if (c.shared_classifier)
    m.classifier = m.token_embedding;
  else
    PS_TRY(m.classifier, src.matrix("output.weight", c.vocab_size, c.dim));
  m.rope_inv_freq = rope_inv_freq_compute(c);
  if (src.has("rope_freqs.weight")) {  // Llama 3.1 scaling, precomputed: frequency i is divided by factor i
    const float* factors = nullptr;
    PS_TRY(factors, src.vector("rope_freqs.weight", c.head_size() / 2));
    for (std::size_t i = 0; i < m.rope_inv_freq.size(); ++i) m.rope_inv_freq[i] /= factors[i];
  }
  return {};
}

void read_generation(const gguf_file& f, generation_defaults& g) {
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (auto id = f.get_uint(key); id && *id < (1u << 24)) {
      const int v = static_cast<int>(*id);
      if (std::find(g.eos_token_ids.begin(), g.eos_token_ids.end(), v) == g.eos_token_ids.end())
        g.eos_token_ids.push_back(v);
    }
  if (auto id = f.get_uint("tokenizer.ggml.bos_token_id"); id && *id < (1u << 24)) g.bos_token_id = static_cast<int>(*id);
}

}  // namespace

namespace {

// The weights are used in place: read their pages in now rather than one fault at a time while serving.
void prefault_tensors(const gguf_file& file) {
  std::size_t total = 0;
  for (const auto& section : file.data_sections()) total += section.size();
  if (total == 0) return;
  load_phase phase("reading the weights into memory");
  for (const auto& section : file.data_sections()) prefault_pages(section);
  phase.finish(fmt::format("read {} of weights into memory", bytes_text(static_cast<std::uint64_t>(total))));
}

}  // namespace

std::expected<std::shared_ptr<const model>, std::string> gguf_model_from(const gguf_file& file,
                                                                         const model_load_options& options) {
  auto arch = read_config(file);
  if (!arch) return std::unexpected(arch.error());
  auto m = std::make_shared<model>();
  const std::filesystem::path path(file.name());
  m->name = path.stem().string();
  if (auto n = file.get_string("general.name"); n && !n->empty()) m->name = std::string(*n);
  m->config = arch->config;
  m->storage.push_back(file.storage());
  read_generation(file, m->generation);
  load_phase tensors_phase("reading GGUF tensors");
  if (auto r = load_tensors(file, *m); !r) return std::unexpected(file.name() + ": " + r.error());
  const model_config& c = m->config;
  const std::string experts = c.n_experts == 0 ? ""
                              : fmt::format(", {} experts, {} a token{}", c.n_experts, c.n_experts_used,
                                            c.shared_expert_hidden_dim > 0 ? ", a shared expert" : "");
  tensors_phase.finish(fmt::format("read {} GGUF tensors ({}, {} layers, dim {}{})", file.tensors().size(),
                                   c.architecture, c.n_layers, c.dim, experts));
  model_convert_weights(*m, options.weights, options.progress);
  if (auto r = model_check(*m); !r) return std::unexpected(file.name() + ": " + r.error());
  if (options.weights == weight_format::as_stored) prefault_tensors(file);
  model_pack_block_panels(*m, file.data_sections());
  spdlog::info("model weights: {} ({} of them in buffers of our own, the rest mapped from the file)",
               bytes_text(model_weight_bytes(*m)), bytes_text(m->owned_bytes));
  return m;
}

std::expected<gguf_file, std::string> gguf_file_map(const std::filesystem::path& path) {
  load_phase map_phase("mapping the GGUF file");
  auto file = gguf_file::open(path);
  if (!file) return file;
  std::uint64_t bytes = 0;
  for (const auto& t : file->tensors()) bytes += t.n_bytes.value_or(0);
  const std::string splits = file->n_splits() > 1 ? fmt::format(" ({} splits)", file->n_splits()) : "";
  map_phase.finish(fmt::format("mapped GGUF file {}{}, {} tensors, {},", path.filename().string(), splits,
                               file->tensors().size(), bytes_text(bytes)));
  return file;
}

std::expected<std::shared_ptr<const model>, std::string> gguf_model_load(const std::filesystem::path& path,
                                                                         const model_load_options& options) {
  auto file = gguf_file_map(path);
  if (!file) return std::unexpected(file.error());
  return gguf_model_from(*file, options);
}

std::optional<std::string> gguf_chat_template(const gguf_file& file) {
  auto t = file.get_string("tokenizer.chat_template");
  if (!t) return std::nullopt;
  return std::string(*t);
}

}  // namespace pagedserve
