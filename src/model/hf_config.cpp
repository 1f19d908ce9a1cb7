// Reads config.json / generation_config.json with simdjson; fields and defaults as transformers'
// LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config, Qwen3MoeConfig and GPT2Config define them.
#include "model/hf_config.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace pagedserve::hf {
namespace {

using simdjson::dom::element;
using simdjson::dom::object;

// Field access that turns every type mismatch into an error naming the field; absent and null
// fields are std::nullopt.
class fields {
 public:
  fields(object obj, std::string file) : obj_(obj), file_(std::move(file)) {}

  std::optional<element> get(std::string_view key) const {
    element e;
    if (obj_[key].get(e) != simdjson::SUCCESS || e.is_null()) return std::nullopt;
    return e;
  }
  std::string error(std::string_view key, std::string_view what) const {
    return file_ + ": field '" + std::string(key) + "' " + std::string(what);
  }
  std::expected<std::optional<std::int64_t>, std::string> opt_int(std::string_view key) const {
    auto e = get(key);
    if (!e) return std::nullopt;
    std::int64_t v;
    if (e->get_int64().get(v)) return std::unexpected(error(key, "is not an integer"));
    return v;
  }
  // A required positive integer below 2^24 (every dimension we accept).
  std::expected<int, std::string> dim(std::string_view key) const {
    auto v = opt_int(key);
    if (!v) return std::unexpected(v.error());
    if (!*v) return std::unexpected(file_ + ": missing field '" + std::string(key) + "'");
    if (**v <= 0 || **v > (1 << 24)) return std::unexpected(error(key, "is out of range: " + std::to_string(**v)));
    return static_cast<int>(**v);
  }
  std::expected<std::optional<double>, std::string> opt_number(std::string_view key) const {
    auto e = get(key);
    if (!e) return std::nullopt;
    double v;
    if (e->get_double().get(v)) return std::unexpected(error(key, "is not a number"));
    return v;
  }
  std::expected<std::optional<bool>, std::string> opt_bool(std::string_view key) const {
    auto e = get(key);
    if (!e) return std::nullopt;
    bool v;
    if (e->get_bool().get(v)) return std::unexpected(error(key, "is not true/false"));
    return v;
  }
  std::expected<std::optional<std::string>, std::string> opt_string(std::string_view key) const {
    auto e = get(key);
    if (!e) return std::nullopt;
    std::string_view v;
    if (e->get_string().get(v)) return std::unexpected(error(key, "is not a string"));
    return std::string(v);
  }
  // An integer or an array of integers (eos_token_id).
  std::expected<std::vector<int>, std::string> int_or_ints(std::string_view key) const {
    auto e = get(key);
    if (!e) return std::vector<int>{};
    std::int64_t v;
    if (!e->get_int64().get(v)) return std::vector<int>{static_cast<int>(v)};
    simdjson::dom::array arr;
    if (e->get_array().get(arr)) return std::unexpected(error(key, "is neither an integer nor an array of them"));
    std::vector<int> out;
    for (element x : arr) {
      if (x.get_int64().get(v)) return std::unexpected(error(key, "holds a non-integer"));
      out.push_back(static_cast<int>(v));
    }
    return out;
  }

 private:
  object obj_;
  std::string file_;
};

// Unwraps an expected into `out`, or returns its error from the enclosing function.
#define PS_TRY(out, expr)                                    \
  do {                                                       \
    auto try_result_ = (expr);                               \
    if (!try_result_) return std::unexpected(try_result_.error()); \
    out = std::move(*try_result_);                           \
  } while (0)

std::expected<family, std::string> architecture(const fields& f, std::string& name) {
  auto e = f.get("architectures");
  simdjson::dom::array arr;
  std::string_view first;
  if (!e) return std::unexpected("config.json: missing field 'architectures'");
  if (e->get_array().get(arr) || arr.size() == 0 || arr.at(0).get_string().get(first))
    return std::unexpected(f.error("architectures", "is not a non-empty array of strings"));
  name = std::string(first);
  if (name == "LlamaForCausalLM" || name == "MistralForCausalLM") return family::llama;
  if (name == "Qwen2ForCausalLM") return family::qwen2;
  if (name == "Qwen3ForCausalLM") return family::qwen3;
  if (name == "Qwen3MoeForCausalLM") return family::qwen3_moe;
  if (name == "GPT2LMHeadModel") return family::gpt2;
  return std::unexpected("config.json: architecture '" + name +
                         "' is not supported (supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
                         "Qwen3ForCausalLM, Qwen3MoeForCausalLM, GPT2LMHeadModel)");
}

// HF's _compute_yarn_parameters: the original context from rope_scaling (else max_position_embeddings),
// attention_factor given, or from mscale / mscale_all_dim, or 0.1 ln(factor) + 1.
std::expected<rope_scaling_config, std::string> yarn_scaling(const fields& r, rope_scaling_config s, int max_position) {
  s.type = rope_scaling_config::kind::yarn;
  std::optional<std::int64_t> original;
  PS_TRY(original, r.opt_int("original_max_position_embeddings"));
  s.original_max_position = original && *original > 0 ? static_cast<int>(*original) : max_position;
  std::optional<double> attention, mscale, mscale_all_dim, beta_fast, beta_slow;
  PS_TRY(attention, r.opt_number("attention_factor"));
  PS_TRY(mscale, r.opt_number("mscale"));
  PS_TRY(mscale_all_dim, r.opt_number("mscale_all_dim"));
  PS_TRY(beta_fast, r.opt_number("beta_fast"));
  PS_TRY(beta_slow, r.opt_number("beta_slow"));
  std::optional<bool> truncate;
  PS_TRY(truncate, r.opt_bool("truncate"));
  auto get_mscale = [&](double m) { return s.factor <= 1 ? 1.0 : 0.1 * m * std::log(s.factor) + 1.0; };
  if (attention) s.attention_factor = static_cast<float>(*attention);
  else if (mscale && mscale_all_dim && *mscale != 0 && *mscale_all_dim != 0)
    s.attention_factor = static_cast<float>(get_mscale(*mscale) / get_mscale(*mscale_all_dim));
  else s.attention_factor = static_cast<float>(get_mscale(1.0));
  if (beta_fast && *beta_fast != 0) s.beta_fast = static_cast<float>(*beta_fast);
  if (beta_slow && *beta_slow != 0) s.beta_slow = static_cast<float>(*beta_slow);
  s.truncate = truncate.value_or(true);
  if (s.beta_fast <= 0 || s.beta_slow <= 0) return std::unexpected("config.json rope_scaling: yarn betas must be positive");
  return s;
}

std::expected<rope_scaling_config, std::string> rope_scaling(const fields& f, int max_position) {
  rope_scaling_config s;
  auto e = f.get("rope_scaling");
  if (!e) return s;
  object obj;
  if (e->get_object().get(obj)) return std::unexpected(f.error("rope_scaling", "is not an object"));
  const fields r(obj, "config.json rope_scaling");
  std::optional<std::string> type;
  PS_TRY(type, r.opt_string("rope_type"));
  if (!type) PS_TRY(type, r.opt_string("type"));  // older configs
  if (!type || *type == "default") return s;
  std::optional<double> factor;
  PS_TRY(factor, r.opt_number("factor"));
  if (!factor || *factor <= 0) return std::unexpected("config.json rope_scaling: missing or non-positive 'factor'");
  s.factor = static_cast<float>(*factor);
  if (*type == "linear") {
    s.type = rope_scaling_config::kind::linear;
    return s;
  }
  if (*type == "yarn") return yarn_scaling(r, s, max_position);
  if (*type != "llama3")
    return std::unexpected("config.json rope_scaling: type '" + *type +
                           "' is not supported (default, linear, llama3, yarn)");
  s.type = rope_scaling_config::kind::llama3;
  std::optional<double> low, high;
  PS_TRY(low, r.opt_number("low_freq_factor"));
  PS_TRY(high, r.opt_number("high_freq_factor"));
  int original = 0;
  PS_TRY(original, r.dim("original_max_position_embeddings"));
  if (!low || !high || *low <= 0 || *high <= *low)
    return std::unexpected("config.json rope_scaling: llama3 needs 0 < low_freq_factor < high_freq_factor");
  s.low_freq_factor = static_cast<float>(*low);
  s.high_freq_factor = static_cast<float>(*high);
  s.original_max_position = original;
  return s;
}

// Which layers are sparse: HF's rule `layer not in mlp_only_layers and (layer + 1) % decoder_sparse_step == 0`.
std::expected<std::vector<char>, std::string> moe_layers(const fields& f, int n_layers) {
  std::optional<std::int64_t> step;
  PS_TRY(step, f.opt_int("decoder_sparse_step"));
  const std::int64_t sparse_step = step.value_or(1);
  if (sparse_step <= 0) return std::unexpected(f.error("decoder_sparse_step", "must be positive"));
  std::vector<char> moe(n_layers, 0);
  for (int l = 0; l < n_layers; ++l) moe[l] = (l + 1) % sparse_step == 0;
  if (auto e = f.get("mlp_only_layers")) {
    simdjson::dom::array arr;
    if (e->get_array().get(arr)) return std::unexpected(f.error("mlp_only_layers", "is not an array"));
    for (element x : arr) {
      std::int64_t l;
      if (x.get_int64().get(l) || l < 0 || l >= n_layers)
        return std::unexpected(f.error("mlp_only_layers", "holds something that is not a layer index"));
      moe[l] = 0;
    }
  }
  return moe;
}

// Mistral's sliding window (a non-null sliding_window is always in force) and Qwen2/3's (only with
// use_sliding_window, and only from layer max_window_layers on, as transformers' layer_types).
std::expected<void, std::string> sliding_window(const fields& f, parsed_config& p) {
  bool enabled = p.arch == family::llama;
  std::optional<std::int64_t> first_layer;
  if (p.arch != family::llama) {
    std::optional<bool> use;
    PS_TRY(use, f.opt_bool("use_sliding_window"));
    enabled = use.value_or(false);
    PS_TRY(first_layer, f.opt_int("max_window_layers"));
  }
  std::optional<std::int64_t> window;
  PS_TRY(window, f.opt_int("sliding_window"));
  if (!enabled || !window || *window <= 0 || *window >= p.config.seq_len) return {};
  if (*window > std::numeric_limits<int>::max()) return std::unexpected(f.error("sliding_window", "is too large"));
  p.config.sliding_window = static_cast<int>(*window);
  p.config.first_sliding_layer = static_cast<int>(std::clamp<std::int64_t>(first_layer.value_or(0), 0, p.config.n_layers));
  return {};
}

// GPT2Config (configuration_gpt2.py): its own key names and defaults; LayerNorm with bias, a gelu_new
// MLP, learned positions, tied head by default. What GPT2Attention can do and the forward pass cannot is
// refused naming the key. reorder_and_upcast_attn is accepted: it only moves the 1/sqrt(head_dim) scale
// into the q.k product and upcasts to fp32, and attention here is fp32 throughout.
std::expected<void, std::string> gpt2_config(const fields& f, parsed_config& p) {
  model_config& c = p.config;
  const auto dim_or = [&](std::string_view key, int fallback) {
    return f.get(key) ? f.dim(key) : std::expected<int, std::string>(fallback);
  };
  PS_TRY(c.dim, dim_or("n_embd", 768));
  PS_TRY(c.n_layers, dim_or("n_layer", 12));
  PS_TRY(c.n_heads, dim_or("n_head", 12));
  PS_TRY(c.seq_len, dim_or("n_positions", 1024));
  PS_TRY(c.vocab_size, dim_or("vocab_size", 50257));
  PS_TRY(c.hidden_dim, dim_or("n_inner", 4 * c.dim));  // null: 4 * n_embd
  c.n_kv_heads = c.n_heads;
  if (c.dim % c.n_heads != 0) return std::unexpected(f.error("n_head", "does not divide n_embd"));
  std::optional<double> eps;
  PS_TRY(eps, f.opt_number("layer_norm_epsilon"));
  c.rms_norm_eps = static_cast<float>(eps.value_or(1e-5));
  if (!(c.rms_norm_eps >= 0.0f)) return std::unexpected(f.error("layer_norm_epsilon", "is negative"));
  std::optional<std::string> act;
  PS_TRY(act, f.opt_string("activation_function"));
  if (act && *act != "gelu_new" && *act != "gelu_pytorch_tanh")
    return std::unexpected(f.error("activation_function", "'" + *act + "' is not supported (gelu_new, gelu_pytorch_tanh)"));
  std::optional<bool> flag;
  PS_TRY(flag, f.opt_bool("tie_word_embeddings"));
  c.shared_classifier = flag.value_or(true);
  PS_TRY(flag, f.opt_bool("scale_attn_weights"));
  if (!flag.value_or(true)) return std::unexpected(f.error("scale_attn_weights", "= false is not supported"));
  for (const char* key : {"scale_attn_by_inverse_layer_idx", "add_cross_attention"}) {
    PS_TRY(flag, f.opt_bool(key));
    if (flag.value_or(false)) return std::unexpected(f.error(key, "= true is not supported"));
  }
  PS_TRY(flag, f.opt_bool("reorder_and_upcast_attn"));
  c.norm = norm_kind::layer;
  c.ffn = ffn_kind::gelu_tanh;
  c.positions = position_kind::learned;
  std::vector<int> ids;
  PS_TRY(p.generation.eos_token_ids, f.int_or_ints("eos_token_id"));
  PS_TRY(ids, f.int_or_ints("bos_token_id"));
  if (!ids.empty()) p.generation.bos_token_id = ids.front();
  // GPT2Config's default for both: <|endoftext|>, 50256, where the vocabulary has it.
  constexpr int end_of_text = 50256;
  if (c.vocab_size > end_of_text) {
    if (p.generation.eos_token_ids.empty()) p.generation.eos_token_ids = {end_of_text};
    if (!p.generation.bos_token_id) p.generation.bos_token_id = end_of_text;
  }
  return {};
}

}  // namespace

std::expected<parsed_config, std::string> config_parse(std::string_view json) {
  simdjson::dom::parser parser;
  element root;
  if (auto err = parser.parse(simdjson::padded_string(json)).get(root))
    return std::unexpected(std::string("config.json: not valid JSON: ") + simdjson::error_message(err));
  object obj;
  if (root.get_object().get(obj)) return std::unexpected("config.json: not a JSON object");
  const fields f(obj, "config.json");

  parsed_config p;
  model_config& c = p.config;
  PS_TRY(p.arch, architecture(f, c.architecture));
  if (p.arch == family::gpt2) {
    if (auto r = gpt2_config(f, p); !r) return std::unexpected(r.error());
    return p;
  }
  PS_TRY(c.dim, f.dim("hidden_size"));
  PS_TRY(c.n_layers, f.dim("num_hidden_layers"));
  PS_TRY(c.n_heads, f.dim("num_attention_heads"));
  PS_TRY(c.vocab_size, f.dim("vocab_size"));
  PS_TRY(c.seq_len, f.dim("max_position_embeddings"));
  c.n_kv_heads = c.n_heads;
  if (f.get("num_key_value_heads")) PS_TRY(c.n_kv_heads, f.dim("num_key_value_heads"));
  const bool qwen3 = p.arch == family::qwen3 || p.arch == family::qwen3_moe;
  c.head_dim = qwen3 ? 128 : 0;  // Qwen3Config's default; the others derive it
  if (f.get("head_dim")) PS_TRY(c.head_dim, f.dim("head_dim"));
  if (c.n_heads % c.n_kv_heads != 0) return std::unexpected("config.json: num_key_value_heads does not divide num_attention_heads");
  if (c.head_size() <= 0 || c.head_size() % 2 != 0 || (c.head_dim == 0 && c.dim % c.n_heads != 0))
    return std::unexpected("config.json: head size must be a positive even integer (hidden_size / num_attention_heads or head_dim)");

  std::optional<double> num;
  PS_TRY(num, f.opt_number("rms_norm_eps"));
  c.rms_norm_eps = static_cast<float>(num.value_or(1e-6));
  PS_TRY(num, f.opt_number("rope_theta"));
  c.rope_theta = static_cast<float>(num.value_or(10000.0));
  if (c.rope_theta <= 1.0f || c.rms_norm_eps < 0.0f) return std::unexpected("config.json: rope_theta or rms_norm_eps out of range");
  PS_TRY(num, f.opt_number("partial_rotary_factor"));
  if (num && *num != 1.0) return std::unexpected("config.json: partial_rotary_factor other than 1 is not supported");
  c.rope = kernels::rope_style::neox;  // HF checkpoints store q/k rows for rotate_half
  PS_TRY(c.rope_scaling, rope_scaling(f, c.seq_len));

  std::optional<bool> flag;
  PS_TRY(flag, f.opt_bool("tie_word_embeddings"));
  c.shared_classifier = flag.value_or(false);
  PS_TRY(flag, f.opt_bool("attention_bias"));
  p.qkv_bias = p.arch == family::qwen2 || flag.value_or(false);
  p.o_bias = p.arch != family::qwen2 && flag.value_or(false);
  p.qk_norm = qwen3;
  PS_TRY(flag, f.opt_bool("mlp_bias"));
  if (flag.value_or(false)) return std::unexpected("config.json: mlp_bias = true is not supported");
  std::optional<std::string> act;
  PS_TRY(act, f.opt_string("hidden_act"));
  if (act && *act != "silu") return std::unexpected("config.json: hidden_act '" + *act + "' is not supported (silu only)");

  p.moe_layer.assign(c.n_layers, 0);
  if (p.arch == family::qwen3_moe) {
    PS_TRY(c.n_experts, f.dim("num_experts"));
    PS_TRY(c.n_experts_used, f.dim("num_experts_per_tok"));
    PS_TRY(c.expert_hidden_dim, f.dim("moe_intermediate_size"));
    if (c.n_experts_used > c.n_experts) return std::unexpected("config.json: num_experts_per_tok exceeds num_experts");
    PS_TRY(flag, f.opt_bool("norm_topk_prob"));
    c.norm_topk_prob = flag.value_or(false);
    PS_TRY(p.moe_layer, moe_layers(f, c.n_layers));
    if (f.get("shared_expert_intermediate_size"))
      return std::unexpected("config.json: shared experts (Qwen2-MoE style) are not supported");
  }
  const bool any_dense = std::find(p.moe_layer.begin(), p.moe_layer.end(), 0) != p.moe_layer.end();
  if (any_dense || f.get("intermediate_size")) PS_TRY(c.hidden_dim, f.dim("intermediate_size"));
  if (auto r = sliding_window(f, p); !r) return std::unexpected(r.error());

  std::vector<int> ids;
  PS_TRY(p.generation.eos_token_ids, f.int_or_ints("eos_token_id"));
  PS_TRY(ids, f.int_or_ints("bos_token_id"));
  if (!ids.empty()) p.generation.bos_token_id = ids.front();
  return p;
}

std::expected<void, std::string> generation_config_parse(std::string_view json, generation_defaults& into) {
  simdjson::dom::parser parser;
  element root;
  object obj;
  if (parser.parse(simdjson::padded_string(json)).get(root) || root.get_object().get(obj))
    return std::unexpected("generation_config.json: not a JSON object");
  const fields f(obj, "generation_config.json");
  std::vector<int> ids;
  PS_TRY(ids, f.int_or_ints("eos_token_id"));
  if (!ids.empty()) into.eos_token_ids = ids;
  PS_TRY(ids, f.int_or_ints("bos_token_id"));
  if (!ids.empty()) into.bos_token_id = ids.front();
  std::optional<double> num;
  PS_TRY(num, f.opt_number("temperature"));
  if (num) into.temperature = static_cast<float>(*num);
  PS_TRY(num, f.opt_number("top_p"));
  if (num) into.top_p = static_cast<float>(*num);
  std::optional<std::int64_t> k;
  PS_TRY(k, f.opt_int("top_k"));
  if (k) into.top_k = static_cast<int>(*k);
  return {};
}

#undef PS_TRY

}  // namespace pagedserve::hf
