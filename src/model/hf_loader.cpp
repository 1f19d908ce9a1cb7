// Builds a model from a Hugging Face folder: config.json says the architecture and shapes, the
// safetensors set supplies each tensor by its transformers name, checked against that shape.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "model/block_loader.hpp"
#include "model/hf_config.hpp"
#include "model/hf_gpt2.hpp"
#include "model/hf_tensor_source.hpp"
#include "model/ps_try.hpp"
#include "model/load_phase.hpp"
#include "model/hf_model.hpp"
#include "model/safetensors.hpp"

namespace pagedserve {
namespace {

std::expected<std::string, std::string> read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected(path.string() + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::expected<void, std::string> load_layer(hf::tensor_source& src, const hf::parsed_config& p, int l, layer_weights& w) {
  const model_config& c = p.config;
  const std::string at = "model.layers." + std::to_string(l) + ".";
  const std::string attn = at + "self_attn.", mlp = at + "mlp.";
  const llama_block_names n{
      .attn_norm = at + "input_layernorm.weight", .wq = attn + "q_proj.weight", .wk = attn + "k_proj.weight",
      .wv = attn + "v_proj.weight", .wo = attn + "o_proj.weight", .bq = attn + "q_proj.bias",
      .bk = attn + "k_proj.bias", .bv = attn + "v_proj.bias", .bo = attn + "o_proj.bias",
      .q_norm = attn + "q_norm.weight", .k_norm = attn + "k_norm.weight",
      .ffn_norm = at + "post_attention_layernorm.weight", .gate = mlp + "gate_proj.weight",
      .up = mlp + "up_proj.weight", .down = mlp + "down_proj.weight"};
  const llama_block_parts parts{.qkv_bias = p.qkv_bias, .o_bias = p.o_bias, .qk_norm = p.qk_norm};
  if (auto r = llama_block_attention_load(src, c, n, parts, w); !r) return r;
  if (!p.moe_layer[l]) return llama_block_dense_ffn_load(src, c, n, w);
  const int dim = c.dim, eh = c.expert_hidden_dim;
  if (c.shared_expert_hidden_dim > 0) {  // Qwen2-MoE's shared expert and its [1, dim] sigmoid gate
    const int sh = c.shared_expert_hidden_dim;
    PS_TRY(w.shared_expert.gate, src.matrix(mlp + "shared_expert.gate_proj.weight", sh, dim));
    PS_TRY(w.shared_expert.up, src.matrix(mlp + "shared_expert.up_proj.weight", sh, dim));
    PS_TRY(w.shared_expert.down, src.matrix(mlp + "shared_expert.down_proj.weight", dim, sh));
    PS_TRY(w.shared_expert_gate, src.matrix(mlp + "shared_expert_gate.weight", 1, dim));
  }
  // Mixtral's checkpoints as published (transformers 4.x): block_sparse_moe, each expert's w1 (gate),
  // w3 (up) and w2 (down); transformers 5 saves it as the others, under mlp.
  const bool mixtral_4x = p.arch == hf::family::mixtral && src.has(at + "block_sparse_moe.gate.weight");
  const std::string moe = mixtral_4x ? at + "block_sparse_moe." : mlp;
  PS_TRY(w.router, src.matrix(moe + "gate.weight", c.n_experts, dim));
  w.experts.resize(c.n_experts);
  if (src.has(moe + "experts.gate_up_proj")) {
    // transformers 5's fused layout: gate_up_proj [experts, 2 * eh, dim] (gate rows, then up rows),
    // down_proj [experts, dim, eh].
    for (int e = 0; e < c.n_experts; ++e) {
      PS_TRY(w.experts[e].gate, src.stacked_matrix(moe + "experts.gate_up_proj", c.n_experts, 2 * eh, dim, e, 0, eh));
      PS_TRY(w.experts[e].up, src.stacked_matrix(moe + "experts.gate_up_proj", c.n_experts, 2 * eh, dim, e, eh, eh));
      PS_TRY(w.experts[e].down, src.stacked_matrix(moe + "experts.down_proj", c.n_experts, dim, eh, e, 0, dim));
    }
    return {};
  }
  const char* gate = mixtral_4x ? "w1.weight" : "gate_proj.weight";
  const char* up = mixtral_4x ? "w3.weight" : "up_proj.weight";
  const char* down = mixtral_4x ? "w2.weight" : "down_proj.weight";
  for (int e = 0; e < c.n_experts; ++e) {
    const std::string ex = moe + "experts." + std::to_string(e) + ".";
    PS_TRY(w.experts[e].gate, src.matrix(ex + gate, eh, dim));
    PS_TRY(w.experts[e].up, src.matrix(ex + up, eh, dim));
    PS_TRY(w.experts[e].down, src.matrix(ex + down, dim, eh));
  }
  return {};
}

std::expected<void, std::string> load_tensors(const safetensors_set& set, const hf::parsed_config& p, model& m) {
  const model_config& c = p.config;
  hf::tensor_source src(set, m);
  PS_TRY(m.token_embedding, src.matrix("model.embed_tokens.weight", c.vocab_size, c.dim));
  m.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l)
    if (auto r = load_layer(src, p, l, m.layers[l]); !r) return r;
  PS_TRY(m.rms_final, src.vector("model.norm.weight", c.dim));
  if (c.shared_classifier)
    m.classifier = m.token_embedding;  // any lm_head.weight in the file is the same tensor, saved twice
  else
    PS_TRY(m.classifier, src.matrix("lm_head.weight", c.vocab_size, c.dim));
  // Every other tensor must have been read: one left over means config and weights describe different
  // models (biases attention_bias does not enable, a layer too many, ...). Skipped: a tied lm_head
  // copy and the rotary buffer old checkpoints saved.
  for (const std::string& name : src.unused())
    if (name != "lm_head.weight" && !name.ends_with(".self_attn.rotary_emb.inv_freq"))
      return std::unexpected("tensor '" + name + "' is in the checkpoint but not part of " + c.architecture +
                             " as config.json describes it (refusing to guess)");
  return {};
}

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
  if (auto r = parsed->arch == hf::family::gpt2 ? hf::gpt2_load_tensors(*set, parsed->config, *m)
                                                 : load_tensors(*set, *parsed, *m);
      !r)
    return fail(r.error());
  model_convert_weights(*m, options.weights, options.progress);
  m->rope_inv_freq = rope_inv_freq_compute(m->config);
  if (auto r = model_check(*m); !r) return fail(r.error());
  for (const auto& note : parsed->notes) spdlog::warn("{}: {}", m->name, note);
  return m;
}

}  // namespace pagedserve
