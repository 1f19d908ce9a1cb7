// Reads config.json / generation_config.json with simdjson; fields and defaults as transformers'
// LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config, Qwen3MoeConfig and GPT2Config define them in 4.x
// and 5.x; the keys each reads and refuses are the table of hf_config_keys.hpp.
#include "model/hf_config.hpp"
#include "model/ps_try.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <span>

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

std::expected<const architecture_entry*, std::string> architecture(const fields& f, std::string& name) {
  auto e = f.get("architectures");
  simdjson::dom::array arr;
  std::string_view first;
  if (!e) return std::unexpected("config.json: missing field 'architectures'");
  if (e->get_array().get(arr) || arr.size() == 0 || arr.at(0).get_string().get(first))
    return std::unexpected(f.error("architectures", "is not a non-empty array of strings"));
  name = std::string(first);
  std::string supported;
  for (const architecture_entry& a : architectures) {
    if (a.name == name) return &a;
    supported += (supported.empty() ? "" : ", ") + std::string(a.name);
  }
  return std::unexpected("config.json: architecture '" + name + "' is not supported (supported: " + supported + ")");
}

// refused_keys: a value other than the neutral one is an error naming the key and what it would change.
std::expected<void, std::string> check_refused(const fields& f, family arch) {
  for (const refused_key& r : refused_keys) {
    if (!(r.families & family_bit(arch))) continue;
    auto e = f.get(r.key);
    if (!e) continue;
    bool ok = false;
    switch (r.ok) {
      case neutral::absent: break;
      case neutral::is_false: ok = e->is_bool() && !e->get_bool().value_unsafe(); break;
      case neutral::is_one: ok = e->is_number() && e->get_double().value_unsafe() == 1.0; break;
      case neutral::is_silu: ok = e->is_string() && e->get_string().value_unsafe() == "silu"; break;
      case neutral::is_true: ok = e->is_bool() && e->get_bool().value_unsafe(); break;
      case neutral::is_gelu_tanh:
        ok = e->is_string() && (e->get_string().value_unsafe() == "gelu_new" ||
                                e->get_string().value_unsafe() == "gelu_pytorch_tanh");
        break;
    }
    if (!ok)
      return std::unexpected("config.json: '" + std::string(r.key) + "' = " + simdjson::minify(*e) + " is not supported (" +
                             std::string(r.why) + ")");
  }
  return {};
}

// Keys in no table of hf_config_keys.hpp, for a log line: not an error (transformers adds bookkeeping
// keys every release), never silent.
std::vector<std::string> unknown_keys(object obj, family arch) {
  std::vector<std::string> out;
  for (auto [key, value] : obj) {
    const bool read = std::any_of(std::begin(read_keys), std::end(read_keys),
                                  [&](const read_key& k) { return k.key == key && (k.families & family_bit(arch)); });
    const bool refused = std::any_of(std::begin(refused_keys), std::end(refused_keys),
                                     [&](const refused_key& k) { return k.key == key && (k.families & family_bit(arch)); });
    const bool ignored = std::find(std::begin(ignored_keys), std::end(ignored_keys), key) != std::end(ignored_keys);
    if (!read && !refused && !ignored) out.emplace_back(key);
  }
  return out;
}

void note_unknown_keys(object obj, parsed_config& p) {
  if (auto unknown = unknown_keys(obj, p.arch); !unknown.empty()) {
    std::string list;
    for (const auto& k : unknown) list += (list.empty() ? "'" : ", '") + k + "'";
    p.notes.push_back("config.json keys not known to this loader, ignored: " + list);
  }
}

bool one_of(std::string_view key, std::span<const std::string_view> keys) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// HF's _compute_yarn_parameters: attention_factor given, or from mscale / mscale_all_dim, or
// 0.1 ln(factor) + 1.
std::expected<void, std::string> yarn_scaling(const fields& r, rope_scaling_config& s) {
  s.type = rope_scaling_config::kind::yarn;
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
  if (s.beta_fast <= 0 || s.beta_slow <= 0) return std::unexpected(r.error("beta_fast", "and beta_slow must be positive"));
  return {};
}

// One RoPE description: rope_theta and the scaling of a rope_scaling (4.x) or rope_parameters (5.x)
// dict. `theta` and `original_override` come from the top level (transformers 5 lets a dict's own
// rope_theta win, and a top-level original_max_position_embeddings win over the dict's).
struct rope_setup {
  float theta = 10000.0f;
  rope_scaling_config scaling;
  bool operator==(const rope_setup& o) const {
    const rope_scaling_config &a = scaling, &b = o.scaling;
    return theta == o.theta && a.type == b.type && a.factor == b.factor && a.low_freq_factor == b.low_freq_factor &&
           a.high_freq_factor == b.high_freq_factor && a.original_max_position == b.original_max_position &&
           a.beta_fast == b.beta_fast && a.beta_slow == b.beta_slow && a.truncate == b.truncate &&
           a.attention_factor == b.attention_factor;
  }
};

std::expected<rope_setup, std::string> rope_dict(object obj, const std::string& where, double top_theta,
                                                 std::optional<std::int64_t> original_override, int max_position) {
  const fields r(obj, where);
  rope_setup out;
  std::optional<double> num;
  PS_TRY(num, r.opt_number("rope_theta"));
  out.theta = static_cast<float>(num.value_or(top_theta));
  PS_TRY(num, r.opt_number("partial_rotary_factor"));
  if (num && *num != 1.0)
    return std::unexpected(r.error("partial_rotary_factor", "other than 1 is not supported (RoPE over part of each head)"));
  std::optional<std::string> type;
  PS_TRY(type, r.opt_string("rope_type"));
  if (!type) PS_TRY(type, r.opt_string("type"));  // older configs
  const std::string t = type.value_or("default");
  std::span<const std::string_view> extra;
  if (t == "linear") extra = rope_linear_keys;
  else if (t == "llama3") extra = rope_llama3_keys;
  else if (t == "yarn") extra = rope_yarn_keys;
  else if (t != "default")
    return std::unexpected(r.error("rope_type", "'" + t + "' is not supported (default, linear, llama3, yarn)"));
  // A key this rope_type does not define (mrope_section, short_factor, ...) would change the rotation.
  for (auto [key, value] : obj)
    if (!value.is_null() && !one_of(key, rope_common_keys) && !one_of(key, extra))
      return std::unexpected(r.error(key, "is not supported with rope_type '" + t + "'"));
  if (t == "default") return out;

  rope_scaling_config& s = out.scaling;
  PS_TRY(num, r.opt_number("factor"));
  if (!num || *num <= 0) return std::unexpected(r.error("factor", "is missing or not positive"));
  s.factor = static_cast<float>(*num);
  if (t == "linear") {
    s.type = rope_scaling_config::kind::linear;
    return out;
  }
  std::optional<std::int64_t> original;
  PS_TRY(original, r.opt_int("original_max_position_embeddings"));
  if (original_override) original = original_override;
  if (original && (*original <= 0 || *original > (1 << 24)))
    return std::unexpected(r.error("original_max_position_embeddings", "is out of range"));
  if (t == "yarn") {
    s.original_max_position = original ? static_cast<int>(*original) : max_position;
    if (auto y = yarn_scaling(r, s); !y) return std::unexpected(y.error());
    return out;
  }
  s.type = rope_scaling_config::kind::llama3;
  std::optional<double> low, high;
  PS_TRY(low, r.opt_number("low_freq_factor"));
  PS_TRY(high, r.opt_number("high_freq_factor"));
  if (!original) return std::unexpected(where + ": llama3 needs 'original_max_position_embeddings'");
  if (!low || !high || *low <= 0 || *high <= *low)
    return std::unexpected(where + ": llama3 needs 0 < low_freq_factor < high_freq_factor");
  s.low_freq_factor = static_cast<float>(*low);
  s.high_freq_factor = static_cast<float>(*high);
  s.original_max_position = static_cast<int>(*original);
  return out;
}

// Where RoPE is described: rope_scaling (4.x; non-null, it wins, as transformers 5 reads old
// configs), else rope_parameters (5.x), one dict or one per layer type ({"full_attention": {...},
// "sliding_attention": {...}}); the forward pass has one RoPE for every layer, so per-type dicts must agree.
std::expected<rope_setup, std::string> rope(const fields& f, const std::vector<std::string>& layer_types, int max_position,
                                            double default_theta) {
  std::optional<double> top_theta;
  PS_TRY(top_theta, f.opt_number("rope_theta"));
  std::optional<std::int64_t> original_override;
  PS_TRY(original_override, f.opt_int("original_max_position_embeddings"));
  const double theta = top_theta.value_or(default_theta);
  std::string key = "rope_scaling";
  auto e = f.get(key);
  if (!e) e = f.get(key = "rope_parameters");
  if (!e) return rope_setup{static_cast<float>(theta), {}};
  object obj;
  if (e->get_object().get(obj)) return std::unexpected(f.error(key, "is not an object"));
  const bool per_layer_type = key == "rope_parameters" && obj.size() > 0 && !layer_types.empty() &&
                              std::all_of(obj.begin(), obj.end(), [&](auto kv) {
                                return std::find(layer_types.begin(), layer_types.end(), kv.key) != layer_types.end();
                              });
  if (!per_layer_type) return rope_dict(obj, "config.json " + key, theta, original_override, max_position);
  std::optional<rope_setup> common;
  for (auto [type, value] : obj) {
    object inner;
    const std::string where = "config.json rope_parameters." + std::string(type);
    if (value.get_object().get(inner)) return std::unexpected(where + ": is not an object");
    auto setup = rope_dict(inner, where, theta, original_override, max_position);
    if (!setup) return setup;
    if (common && !(*common == *setup))
      return std::unexpected(f.error("rope_parameters", "differs between layer types (per-layer RoPE is not supported)"));
    common = *setup;
  }
  return *common;
}

std::expected<std::vector<std::string>, std::string> layer_types(const fields& f, int n_layers) {
  std::vector<std::string> out;
  auto e = f.get("layer_types");
  if (!e) return out;
  simdjson::dom::array arr;
  if (e->get_array().get(arr)) return std::unexpected(f.error("layer_types", "is not an array"));
  for (element x : arr) {
    std::string_view t;
    if (x.get_string().get(t)) return std::unexpected(f.error("layer_types", "holds a non-string"));
    if (t != "full_attention" && t != "sliding_attention")
      return std::unexpected(f.error("layer_types", "holds '" + std::string(t) +
                                                        "' (full_attention and sliding_attention are supported)"));
    out.emplace_back(t);
  }
  if (static_cast<int>(out.size()) != n_layers)
    return std::unexpected(f.error("layer_types", "has " + std::to_string(out.size()) + " entries for " +
                                                      std::to_string(n_layers) + " layers"));
  return out;
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

// The expert count: num_experts (Qwen 4.x; Mixtral's alias) or num_local_experts (5.x, Mixtral); both, they must agree.
std::expected<int, std::string> expert_count(const fields& f) {
  const bool old_key = f.get("num_experts").has_value(), new_key = f.get("num_local_experts").has_value();
  if (!old_key && !new_key) return std::unexpected("config.json: missing field 'num_local_experts' (or 'num_experts')");
  int n_old = 0, n_new = 0;
  if (old_key) PS_TRY(n_old, f.dim("num_experts"));
  if (new_key) PS_TRY(n_new, f.dim("num_local_experts"));
  if (old_key && new_key && n_old != n_new)
    return std::unexpected("config.json: 'num_experts' and 'num_local_experts' disagree");
  return new_key ? n_new : n_old;
}

// Sliding-window attention. Mistral and Mixtral: a non-null sliding_window is in force in every layer (4.x) or
// in the layers layer_types marks sliding (5.x). Qwen2/3: only with use_sliding_window, in the
// layers layer_types marks sliding, else (older configs) from layer max_window_layers on.
std::expected<void, std::string> sliding_window(const fields& f, const std::vector<std::string>& types, parsed_config& p) {
  model_config& c = p.config;
  if (p.arch == family::llama) return {};  // refused_keys keeps sliding_window and layer_types out of Llama
  const bool mistral = p.arch == family::mistral || p.arch == family::mixtral;
  bool enabled = mistral;
  std::optional<std::int64_t> first_layer;
  if (!mistral) {
    std::optional<bool> use;
    PS_TRY(use, f.opt_bool("use_sliding_window"));
    enabled = use.value_or(false);
    PS_TRY(first_layer, f.opt_int("max_window_layers"));
  }
  std::optional<std::int64_t> window;
  PS_TRY(window, f.opt_int("sliding_window"));
  if (!enabled || !window || *window <= 0 || *window >= c.seq_len) return {};
  if (*window > std::numeric_limits<int>::max()) return std::unexpected(f.error("sliding_window", "is too large"));
  c.sliding_window = static_cast<int>(*window);
  c.sliding_layers.assign(c.n_layers, 0);
  for (int l = 0; l < c.n_layers; ++l)
    c.sliding_layers[l] = !types.empty() ? types[l] == "sliding_attention"
                          : mistral ? true
                                                      : l >= first_layer.value_or(0);
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
  // activation_function, scale_attn_weights, scale_attn_by_inverse_layer_idx and add_cross_attention
  // were checked by refused_keys (hf_config_keys.hpp).
  std::optional<bool> flag;
  PS_TRY(flag, f.opt_bool("tie_word_embeddings"));
  c.shared_classifier = flag.value_or(true);
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
  const architecture_entry* a = nullptr;
  PS_TRY(a, architecture(f, c.architecture));
  p.arch = a->arch;
  if (auto r = check_refused(f, p.arch); !r) return std::unexpected(r.error());
  if (p.arch == family::gpt2) {
    if (auto r = gpt2_config(f, p); !r) return std::unexpected(r.error());
    note_unknown_keys(obj, p);
    return p;
  }
  PS_TRY(c.dim, f.dim("hidden_size"));
  PS_TRY(c.n_layers, f.dim("num_hidden_layers"));
  PS_TRY(c.n_heads, f.dim("num_attention_heads"));
  PS_TRY(c.vocab_size, f.dim("vocab_size"));
  PS_TRY(c.seq_len, f.dim("max_position_embeddings"));
  c.n_kv_heads = c.n_heads;
  if (f.get("num_key_value_heads")) PS_TRY(c.n_kv_heads, f.dim("num_key_value_heads"));
  c.head_dim = a->head_dim;
  if (f.get("head_dim")) PS_TRY(c.head_dim, f.dim("head_dim"));
  if (c.n_heads % c.n_kv_heads != 0) return std::unexpected("config.json: num_key_value_heads does not divide num_attention_heads");
  if (c.head_size() <= 0 || c.head_size() % 2 != 0 || (c.head_dim == 0 && c.dim % c.n_heads != 0))
    return std::unexpected("config.json: head size must be a positive even integer (hidden_size / num_attention_heads or head_dim)");

  std::optional<double> num;
  PS_TRY(num, f.opt_number("rms_norm_eps"));
  c.rms_norm_eps = static_cast<float>(num.value_or(1e-6));
  std::vector<std::string> types;
  PS_TRY(types, layer_types(f, c.n_layers));
  rope_setup r;
  PS_TRY(r, rope(f, types, c.seq_len, a->rope_theta));
  c.rope_theta = r.theta;
  c.rope_scaling = r.scaling;
  if (c.rope_theta <= 1.0f || c.rms_norm_eps < 0.0f) return std::unexpected("config.json: rope_theta or rms_norm_eps out of range");
  c.rope = kernels::rope_style::neox;  // HF checkpoints store q/k rows for rotate_half

  std::optional<bool> flag;
  PS_TRY(flag, f.opt_bool("tie_word_embeddings"));
  c.shared_classifier = flag.value_or(a->tie_word_embeddings);
  PS_TRY(flag, f.opt_bool("attention_bias"));
  const bool attention_bias = a->has_attention_bias && flag.value_or(false);
  p.qkv_bias = a->qkv_bias || attention_bias;
  if (p.arch == family::qwen2_moe) {  // transformers 5 names Qwen2-MoE's always-on q/k/v biases qkv_bias
    PS_TRY(flag, f.opt_bool("qkv_bias"));
    p.qkv_bias = flag.value_or(true);
  }
  p.o_bias = attention_bias;
  p.qk_norm = a->qk_norm;

  p.moe_layer.assign(c.n_layers, 0);
  if (p.arch == family::qwen3_moe || p.arch == family::qwen2_moe || p.arch == family::mixtral) {
    PS_TRY(c.n_experts, expert_count(f));
    PS_TRY(c.n_experts_used, f.dim("num_experts_per_tok"));
    if (c.n_experts_used > c.n_experts) return std::unexpected("config.json: num_experts_per_tok exceeds the expert count");
    if (p.arch == family::mixtral) {  // every layer sparse, experts intermediate_size wide, top-k renormalised
      PS_TRY(c.expert_hidden_dim, f.dim("intermediate_size"));
      c.norm_topk_prob = true;
      p.moe_layer.assign(c.n_layers, 1);
    } else {
      PS_TRY(c.expert_hidden_dim, f.dim("moe_intermediate_size"));
      PS_TRY(flag, f.opt_bool("norm_topk_prob"));
      c.norm_topk_prob = flag.value_or(false);
      PS_TRY(p.moe_layer, moe_layers(f, c.n_layers));
    }
    // Qwen2-MoE: a shared expert beside the routed ones in every MoE layer.
    if (p.arch == family::qwen2_moe) PS_TRY(c.shared_expert_hidden_dim, f.dim("shared_expert_intermediate_size"));
  }
  const bool any_dense = std::find(p.moe_layer.begin(), p.moe_layer.end(), 0) != p.moe_layer.end();
  if (any_dense || f.get("intermediate_size")) PS_TRY(c.hidden_dim, f.dim("intermediate_size"));
  if (auto w = sliding_window(f, types, p); !w) return std::unexpected(w.error());

  std::vector<int> ids;
  PS_TRY(p.generation.eos_token_ids, f.int_or_ints("eos_token_id"));
  PS_TRY(ids, f.int_or_ints("bos_token_id"));
  if (!ids.empty()) p.generation.bos_token_id = ids.front();
  note_unknown_keys(obj, p);
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
  // The sampling defaults vLLM's --generation-config auto takes from the file (do_sample = false
  // means greedy: temperature 0).
  std::optional<double> num;
  std::optional<bool> do_sample;
  PS_TRY(do_sample, f.opt_bool("do_sample"));
  PS_TRY(num, f.opt_number("temperature"));
  if (num) into.temperature = static_cast<float>(*num);
  if (do_sample && !*do_sample) into.temperature = 0.0f;
  PS_TRY(num, f.opt_number("top_p"));
  if (num) into.top_p = static_cast<float>(*num);
  PS_TRY(num, f.opt_number("min_p"));
  if (num) into.min_p = static_cast<float>(*num);
  PS_TRY(num, f.opt_number("repetition_penalty"));
  if (num) into.repetition_penalty = static_cast<float>(*num);
  std::optional<std::int64_t> k;
  PS_TRY(k, f.opt_int("top_k"));
  if (k) into.top_k = static_cast<int>(std::clamp<std::int64_t>(*k, -1, std::numeric_limits<int>::max()));
  PS_TRY(k, f.opt_int("max_new_tokens"));
  if (k && *k > 0) into.max_new_tokens = static_cast<int>(std::min<std::int64_t>(*k, std::numeric_limits<int>::max()));
  return {};
}

}  // namespace pagedserve::hf
