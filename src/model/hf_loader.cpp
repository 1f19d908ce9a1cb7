// Builds a model from a Hugging Face folder: config.json says the architecture and shapes, the
// safetensors set supplies each tensor by its transformers name, checked against that shape.
#include <spdlog/spdlog.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "model/hf_config.hpp"
#include "model/load_phase.hpp"
#include "pagedserve/hf_model.hpp"
#include "pagedserve/safetensors.hpp"

namespace pagedserve {
namespace {

std::expected<std::string, std::string> read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected(path.string() + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Looks tensors up by name and turns them into weight views (or fp32 vectors), with errors that
// name the tensor and the architecture that needs it.
class tensor_source {
 public:
  tensor_source(const safetensors_set& set, model& m) : set_(set), m_(m) {}

  std::expected<weight, std::string> matrix(const std::string& name, int rows, int cols) {
    auto t = find(name, {rows, cols});
    if (!t) return std::unexpected(t.error());
    const safetensors_tensor& st = **t;
    const void* data = st.data;
    // A tensor not aligned to its element size (legal in the format, rare in practice) is copied.
    if (reinterpret_cast<std::uintptr_t>(data) % dtype_size(*st.type) != 0) {
      std::byte* copy = m_.keep(std::vector<std::byte>(st.n_bytes));
      std::memcpy(copy, st.data, st.n_bytes);
      data = copy;
    }
    return weight{data, *st.type, rows, cols};
  }

  // A norm weight or bias, copied to fp32.
  std::expected<const float*, std::string> vector(const std::string& name, int n) {
    auto t = find(name, {n});
    if (!t) return std::unexpected(t.error());
    std::vector<float> v(n);
    const std::byte* p = (*t)->data;
    for (int i = 0; i < n; ++i) {
      if (*(*t)->type == dtype::f32) {
        std::memcpy(&v[i], p + 4 * i, 4);
      } else {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        v[i] = *(*t)->type == dtype::bf16 ? bf16_to_f32(h) : f16_to_f32(h);
      }
    }
    return m_.keep(std::move(v));
  }

 private:
  std::expected<const safetensors_tensor*, std::string> find(const std::string& name,
                                                             const std::vector<std::int64_t>& shape) const {
    const safetensors_tensor* t = set_.find(name);
    if (!t) return std::unexpected("missing tensor '" + name + "' (" + m_.config.architecture + " needs it)");
    if (!t->type) return std::unexpected("tensor '" + name + "' has dtype " + t->dtype_name + "; expected F32, BF16 or F16");
    if (t->shape != shape)
      return std::unexpected("tensor '" + name + "' has shape " + shape_text(t->shape) + ", expected " + shape_text(shape));
    return t;
  }

  const safetensors_set& set_;
  model& m_;
};

// Unwraps an expected into `out`, or returns its error from the enclosing function.
#define PS_TRY(out, expr)                                          \
  do {                                                             \
    auto try_result_ = (expr);                                     \
    if (!try_result_) return std::unexpected(try_result_.error()); \
    out = *try_result_;                                            \
  } while (0)

std::expected<void, std::string> load_layer(tensor_source& src, const hf::parsed_config& p, int l, layer_weights& w) {
  const model_config& c = p.config;
  const std::string at = "model.layers." + std::to_string(l) + ".";
  const std::string attn = at + "self_attn.", mlp = at + "mlp.";
  const int dim = c.dim, qd = c.q_dim(), kvd = c.kv_dim(), hs = c.head_size();
  PS_TRY(w.rms_att, src.vector(at + "input_layernorm.weight", dim));
  PS_TRY(w.wq, src.matrix(attn + "q_proj.weight", qd, dim));
  PS_TRY(w.wk, src.matrix(attn + "k_proj.weight", kvd, dim));
  PS_TRY(w.wv, src.matrix(attn + "v_proj.weight", kvd, dim));
  PS_TRY(w.wo, src.matrix(attn + "o_proj.weight", dim, qd));
  if (p.qkv_bias) {
    PS_TRY(w.bq, src.vector(attn + "q_proj.bias", qd));
    PS_TRY(w.bk, src.vector(attn + "k_proj.bias", kvd));
    PS_TRY(w.bv, src.vector(attn + "v_proj.bias", kvd));
  }
  if (p.o_bias) PS_TRY(w.bo, src.vector(attn + "o_proj.bias", dim));
  if (p.qk_norm) {
    PS_TRY(w.q_norm, src.vector(attn + "q_norm.weight", hs));
    PS_TRY(w.k_norm, src.vector(attn + "k_norm.weight", hs));
  }
  PS_TRY(w.rms_ffn, src.vector(at + "post_attention_layernorm.weight", dim));
  if (!p.moe_layer[l]) {
    PS_TRY(w.w_gate, src.matrix(mlp + "gate_proj.weight", c.hidden_dim, dim));
    PS_TRY(w.w_up, src.matrix(mlp + "up_proj.weight", c.hidden_dim, dim));
    PS_TRY(w.w_down, src.matrix(mlp + "down_proj.weight", dim, c.hidden_dim));
    return {};
  }
  const int eh = c.expert_hidden_dim;
  PS_TRY(w.router, src.matrix(mlp + "gate.weight", c.n_experts, dim));
  w.experts.resize(c.n_experts);
  for (int e = 0; e < c.n_experts; ++e) {
    const std::string ex = mlp + "experts." + std::to_string(e) + ".";
    PS_TRY(w.experts[e].gate, src.matrix(ex + "gate_proj.weight", eh, dim));
    PS_TRY(w.experts[e].up, src.matrix(ex + "up_proj.weight", eh, dim));
    PS_TRY(w.experts[e].down, src.matrix(ex + "down_proj.weight", dim, eh));
  }
  return {};
}

std::expected<void, std::string> load_tensors(const safetensors_set& set, const hf::parsed_config& p, model& m) {
  const model_config& c = p.config;
  tensor_source src(set, m);
  PS_TRY(m.token_embedding, src.matrix("model.embed_tokens.weight", c.vocab_size, c.dim));
  m.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l)
    if (auto r = load_layer(src, p, l, m.layers[l]); !r) return r;
  PS_TRY(m.rms_final, src.vector("model.norm.weight", c.dim));
  if (c.shared_classifier)
    m.classifier = m.token_embedding;  // any lm_head.weight in the file is the same tensor, saved twice
  else
    PS_TRY(m.classifier, src.matrix("lm_head.weight", c.vocab_size, c.dim));
  return {};
}

#undef PS_TRY

}  // namespace

std::expected<std::shared_ptr<const model>, std::string> hf_model_load(const std::filesystem::path& dir,
                                                                       const model_load_options& options) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return std::unexpected(dir.string() + ": not a directory");
  auto fail = [&](const std::string& what) { return std::unexpected(dir.string() + ": " + what); };
  load_phase config_phase("reading config.json");
  auto config_text = read_text(dir / "config.json");
  if (!config_text) return std::unexpected(config_text.error());
  auto parsed = hf::config_parse(*config_text);
  if (!parsed) return fail(parsed.error());
  if (std::filesystem::exists(dir / "generation_config.json", ec)) {
    auto text = read_text(dir / "generation_config.json");
    if (!text) return std::unexpected(text.error());
    if (auto r = hf::generation_config_parse(*text, parsed->generation); !r) return fail(r.error());
  }
  const model_config& pc = parsed->config;
  config_phase.finish(fmt::format("read config.json ({}, {} layers, dim {}, vocab {})", pc.architecture, pc.n_layers,
                                  pc.dim, pc.vocab_size));
  load_phase map_phase("mapping safetensors files");
  auto set = safetensors_set::open_folder(dir);
  if (!set) return std::unexpected(set.error());
  std::uint64_t mapped = 0;
  for (const auto& f : set->files()) mapped += f.mapping()->bytes().size();
  map_phase.finish(fmt::format("mapped {} safetensors file{}, {},", set->files().size(), set->files().size() == 1 ? "" : "s",
                               bytes_text(mapped)));

  auto m = std::make_shared<model>();
  const std::filesystem::path clean = dir.filename().empty() ? dir.parent_path() : dir;
  m->name = clean.filename().string();
  m->config = parsed->config;
  m->generation = parsed->generation;
  for (const auto& f : set->files()) m->storage.push_back(f.mapping());
  if (auto r = load_tensors(*set, *parsed, *m); !r) return fail(r.error());
  model_convert_weights(*m, options.weights, options.progress);
  m->rope_inv_freq = rope_inv_freq_compute(m->config);
  if (auto r = model_check(*m); !r) return fail(r.error());
  for (const auto& note : parsed->notes) spdlog::warn("{}: {}", m->name, note);
  return m;
}

}  // namespace pagedserve
