// What every loader shares: RoPE frequencies, the completeness check and weight re-storage.
#include <tbb/parallel_for.h>

#include <cmath>
#include <cstring>
#include <numbers>

#include <spdlog/spdlog.h>

#include "model/load_phase.hpp"
#include "model/load_progress.hpp"
#include "model/block_panels_load.hpp"
#include "model/ggml_blocks.hpp"
#include "pagedserve/model.hpp"
#include "model/quantize.hpp"

namespace pagedserve {

std::vector<float> rope_inv_freq_compute(const model_config& c) {
  if (c.positions == position_kind::learned) return {};
  const int hs = c.head_size();
  std::vector<float> inv(hs / 2);
  for (int i = 0; i < hs / 2; ++i) inv[i] = 1.0f / std::pow(c.rope_theta, static_cast<float>(2 * i) / static_cast<float>(hs));
  const rope_scaling_config& s = c.rope_scaling;
  switch (s.type) {
    case rope_scaling_config::kind::none: break;
    case rope_scaling_config::kind::linear:
      for (float& f : inv) f /= s.factor;
      break;
    case rope_scaling_config::kind::llama3: {
      // HF's _compute_llama3_parameters: long wavelengths slowed by `factor`, short ones kept, the
      // band between blended smoothly.
      const float old_len = static_cast<float>(s.original_max_position);
      const float low_freq_wavelen = old_len / s.low_freq_factor;
      const float high_freq_wavelen = old_len / s.high_freq_factor;
      for (float& f : inv) {
        const float wavelen = 2.0f * std::numbers::pi_v<float> / f;
        if (wavelen < high_freq_wavelen) continue;
        if (wavelen > low_freq_wavelen) {
          f /= s.factor;
          continue;
        }
        const float smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1.0f - smooth) * f / s.factor + smooth * f;
      }
      break;
    }
    case rope_scaling_config::kind::yarn: {
      // The correction range: dims whose wavelength fits beta rotations in the original context.
      const double dim = hs, base = c.rope_theta, old_len = s.original_max_position;
      auto correction_dim = [&](double rotations) {
        return dim * std::log(old_len / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
      };
      double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
      if (s.truncate) low = std::floor(low), high = std::ceil(high);
      low = std::max(low, 0.0);
      high = std::min(high, dim - 1);
      if (low == high) high += 0.001;
      for (int i = 0; i < hs / 2; ++i) {
        // Computed in fp32 as torch does: base^(2i/dim), then the ramp.
        const float pos_freq = std::pow(c.rope_theta, static_cast<float>(2 * i) / static_cast<float>(hs));
        const float extrapolation = 1.0f / pos_freq, interpolation = 1.0f / (s.factor * pos_freq);
        const float ramp = std::clamp(static_cast<float>((i - low) / (high - low)), 0.0f, 1.0f);
        const float keep = 1.0f - ramp;  // share of the unscaled frequency
        inv[i] = interpolation * (1.0f - keep) + extrapolation * keep;
      }
      break;
    }
  }
  return inv;
}

namespace {

std::string shape_text(int rows, int cols) { return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]"; }

std::expected<void, std::string> check_matrix(const weight& w, int rows, int cols, const std::string& what) {
  if (w.empty()) return std::unexpected(what + " is missing");
  if (w.rows != rows || w.cols != cols)
    return std::unexpected(what + " has shape " + shape_text(w.rows, w.cols) + ", expected " + shape_text(rows, cols));
  return {};
}

std::expected<void, std::string> check_vector(const float* v, const std::string& what) {
  if (!v) return std::unexpected(what + " is missing");
  return {};
}

std::expected<void, std::string> check_config(const model_config& c) {
  auto bad = [](const std::string& what) { return std::unexpected("model config: " + what); };
  if (c.dim <= 0 || c.n_layers <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.vocab_size <= 0 || c.seq_len <= 0)
    return bad("dim, n_layers, n_heads, n_kv_heads, vocab_size and seq_len must be positive");
  if (c.n_heads % c.n_kv_heads != 0) return bad("n_kv_heads does not divide n_heads");
  if (c.head_size() <= 0 || (c.positions == position_kind::rope && c.head_size() % 2 != 0))
    return bad("head size must be positive and even (RoPE pairs)");
  if (c.n_experts > 0 && (c.n_experts_used <= 0 || c.n_experts_used > c.n_experts || c.expert_hidden_dim <= 0))
    return bad("MoE needs 0 < experts per token <= experts and a positive expert width");
  if (c.n_experts > 0 && c.ffn != ffn_kind::swiglu) return bad("MoE experts are SwiGLU only");
  if (c.shared_expert_hidden_dim < 0 || (c.shared_expert_hidden_dim > 0 && c.n_experts == 0))
    return bad("a shared expert needs experts and a positive width");
  return {};
}

// GPT-2's extra vectors: LayerNorm biases, and the plain MLP's biases (its up projection has no gate).
std::expected<void, std::string> check_gpt2_parts(const model_config& c, const layer_weights& l, const std::string& at) {
  if (c.norm == norm_kind::layer)
    for (auto r : {check_vector(l.att_norm_bias, at + "attention norm bias"), check_vector(l.ffn_norm_bias, at + "ffn norm bias")})
      if (!r) return r;
  if (c.ffn != ffn_kind::gelu_tanh) return {};
  if (!l.w_gate.empty()) return std::unexpected(at + "has a gate projection, but its GELU MLP has none");
  for (auto r : {check_matrix(l.w_up, c.hidden_dim, c.dim, at + "w_up"), check_matrix(l.w_down, c.dim, c.hidden_dim, at + "w_down"),
                 check_vector(l.b_up, at + "up bias"), check_vector(l.b_down, at + "down bias")})
    if (!r) return r;
  return {};
}

std::expected<void, std::string> check_layer(const model_config& c, const layer_weights& l, const std::string& at) {
  const int dim = c.dim, qd = c.q_dim(), kvd = c.kv_dim();
  for (auto r : {check_vector(l.rms_att, at + "attention norm"), check_matrix(l.wq, qd, dim, at + "wq"),
                 check_matrix(l.wk, kvd, dim, at + "wk"), check_matrix(l.wv, kvd, dim, at + "wv"),
                 check_matrix(l.wo, dim, qd, at + "wo"), check_vector(l.rms_ffn, at + "ffn norm")})
    if (!r) return r;
  if ((l.q_norm == nullptr) != (l.k_norm == nullptr)) return std::unexpected(at + "has only one of q_norm and k_norm");
  if (auto r = check_gpt2_parts(c, l, at); !r) return r;
  if (c.ffn == ffn_kind::gelu_tanh) return {};  // its MLP is checked above; check_config refused experts
  if (!l.is_moe()) {
    if (!l.router.empty()) return std::unexpected(at + "has a router but no experts");
    for (auto r : {check_matrix(l.w_gate, c.hidden_dim, dim, at + "w_gate"),
                   check_matrix(l.w_up, c.hidden_dim, dim, at + "w_up"),
                   check_matrix(l.w_down, dim, c.hidden_dim, at + "w_down")})
      if (!r) return r;
    return {};
  }
  if (static_cast<int>(l.experts.size()) != c.n_experts)
    return std::unexpected(at + "has " + std::to_string(l.experts.size()) + " experts, config says " +
                           std::to_string(c.n_experts));
  if (auto r = check_matrix(l.router, c.n_experts, dim, at + "router"); !r) return r;
  const int eh = c.expert_hidden_dim;
  const auto check_expert = [&](const expert_weights& e, int width, const std::string& ex) -> std::expected<void, std::string> {
    for (auto r : {check_matrix(e.gate, width, dim, ex + "gate"), check_matrix(e.up, width, dim, ex + "up"),
                   check_matrix(e.down, dim, width, ex + "down")})
      if (!r) return r;
    return {};
  };
  for (std::size_t e = 0; e < l.experts.size(); ++e)
    if (auto r = check_expert(l.experts[e], eh, at + "expert " + std::to_string(e) + " "); !r) return r;
  if (c.shared_expert_hidden_dim == 0) {
    if (l.has_shared_expert() || !l.shared_expert_gate.empty()) return std::unexpected(at + "has a shared expert the config has not");
    return {};
  }
  if (auto r = check_expert(l.shared_expert, c.shared_expert_hidden_dim, at + "shared expert "); !r) return r;
  return check_matrix(l.shared_expert_gate, 1, dim, at + "shared expert gate");
}

}  // namespace

std::expected<void, std::string> model_check(const model& m) {
  const model_config& c = m.config;
  if (auto r = check_config(c); !r) return r;
  if (auto r = check_matrix(m.token_embedding, c.vocab_size, c.dim, "token embedding"); !r) return r;
  if (auto r = check_matrix(m.classifier, c.vocab_size, c.dim, "classifier"); !r) return r;
  if (auto r = check_vector(m.rms_final, "final norm"); !r) return r;
  if (c.norm == norm_kind::layer)
    if (auto r = check_vector(m.final_norm_bias, "final norm bias"); !r) return r;
  const bool rope = c.positions == position_kind::rope;
  if (!rope)
    if (auto r = check_matrix(m.position_embedding, c.seq_len, c.dim, "position embedding"); !r) return r;
  if (static_cast<int>(m.rope_inv_freq.size()) != (rope ? c.head_size() / 2 : 0))
    return std::unexpected("rope_inv_freq has " + std::to_string(m.rope_inv_freq.size()) + " entries, expected " +
                           std::to_string(rope ? c.head_size() / 2 : 0));
  if (static_cast<int>(m.layers.size()) != c.n_layers)
    return std::unexpected("model has " + std::to_string(m.layers.size()) + " layers, config says " +
                           std::to_string(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l)
    if (auto r = check_layer(c, m.layers[l], "layer " + std::to_string(l) + " "); !r) return r;
  return {};
}

namespace {

// A copy of w in `to`, converted in parallel over rows (exact when widening). Block types go straight
// into row panels where this CPU has a panel kernel for them (as the GGUF loader repacks its files'
// blocks), unless `panels_allowed` is false (the token embedding: row lookups).
weight convert_matrix(model& m, const weight& w, dtype to, bool panels_allowed) {
  if (w.empty() || w.type == to) return w;
  if (is_block_quantized(to)) {
    const std::size_t row_bytes = block_row_bytes(to, w.cols);
    std::vector<std::byte> rows(static_cast<std::size_t>(w.rows) * row_bytes);
    tbb::parallel_for(0, w.rows, [&](int r) {
      std::vector<float> row(static_cast<std::size_t>(w.cols));
      weight_row_to_f32(row.data(), w, r);
      const std::vector<std::byte> blocks = quantize_blocks(to, row);
      std::memcpy(rows.data() + static_cast<std::size_t>(r) * row_bytes, blocks.data(), row_bytes);
    });
    const weight as_rows{rows.data(), to, w.rows, w.cols};
    if (panels_allowed && block_panels_here(to)) return block_panels_kept(m, as_rows);
    return weight{m.keep(std::move(rows)), to, w.rows, w.cols};
  }
  if (to == dtype::i8) {
    // The packed weights on huge pages, as the GGUF loader's panels: a decode step streams them all.
    i8_matrix q = quantize_matrix_i8(w);
    const std::byte* packed = model_keep_on_huge_pages(m, std::as_bytes(std::span(q.packed)));
    return weight{packed, dtype::i8, q.rows, q.cols, m.keep(std::move(q.scales)), m.keep(std::move(q.row_sums))};
  }
  weight out = w;
  out.type = to;
  out.scales = nullptr;
  const std::size_t cols = w.cols;
  if (to == dtype::f32) {
    float* dst = m.keep(std::vector<float>(w.n_elements()));
    tbb::parallel_for(0, w.rows, [&](int r) { weight_row_to_f32(dst + r * cols, w, r); });
    out.data = dst;
    return out;
  }
  std::uint16_t* dst = m.keep(std::vector<std::uint16_t>(w.n_elements()));
  tbb::parallel_for(0, w.rows, [&](int r) {
    std::vector<float> row(cols);  // a whole row at once: a block format decodes per block, not per element
    weight_row_to_f32(row.data(), w, r);
    for (std::size_t i = 0; i < cols; ++i) dst[r * cols + i] = to == dtype::bf16 ? f32_to_bf16(row[i]) : f32_to_f16(row[i]);
  });
  out.data = dst;
  return out;
}

}  // namespace

std::uint64_t model_weight_bytes(const model& m) {
  std::uint64_t bytes = m.token_embedding.n_bytes() + m.position_embedding.n_bytes();
  if (m.classifier != m.token_embedding) bytes += m.classifier.n_bytes();
  for (const layer_weights& l : m.layers) {
    for (const weight* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.router, &l.shared_expert_gate})
      bytes += w->n_bytes();
    l.for_each_expert([&](const expert_weights& e) { bytes += e.n_bytes(); });
  }
  return bytes;
}

double model_step_weight_bytes(const model& m, int n_tokens) {
  const model_config& c = m.config;
  double total = static_cast<double>(m.classifier.n_bytes());
  for (const layer_weights& l : m.layers) {
    for (const weight* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.router, &l.shared_expert_gate})
      total += static_cast<double>(w->n_bytes());
    if (l.has_shared_expert()) total += static_cast<double>(l.shared_expert.n_bytes());
    if (l.experts.empty()) continue;
    double experts = 0;
    for (const expert_weights& e : l.experts) experts += static_cast<double>(e.n_bytes());
    total += experts / static_cast<double>(l.experts.size()) * std::min(n_tokens * c.n_experts_used, c.n_experts);
  }
  return total;
}

std::optional<weight_format> weight_format_parse(std::string_view name) {
  if (name == "none") return weight_format::as_stored;
  if (name == "f32") return weight_format::f32;
  if (name == "bf16") return weight_format::bf16;
  if (name == "int8") return weight_format::int8;
  if (name == "int4") return weight_format::int4;
  return std::nullopt;
}

namespace {

// The dtype w is re-stored in: int4's block type needs rows of whole blocks, and a matrix without
// them (stories260K's 172-wide hidden layer) takes int8 instead.
dtype target_of(const weight& w, weight_format format) {
  switch (format) {
    case weight_format::f32: return dtype::f32;
    case weight_format::bf16: return dtype::bf16;
    case weight_format::int8: return dtype::i8;
    case weight_format::int4: return w.cols % block_layout_of(model_int4_type).elements == 0 ? model_int4_type : dtype::i8;
    case weight_format::as_stored: break;
  }
  return w.type;
}

// The matrices model_convert_weights re-stores, in order: the tied classifier is the embedding's
// (reassigned after), and under int8/int4 the MoE router (and the shared expert's gate) keeps its
// stored type: its scores pick the experts, and a flipped top-k choice costs more than the few bytes it streams.
std::vector<weight*> matrices_to_convert(model& m, weight_format format) {
  std::vector<weight*> out{&m.token_embedding};
  if (m.classifier != m.token_embedding) out.push_back(&m.classifier);
  const bool quantizing = format == weight_format::int8 || format == weight_format::int4;
  for (layer_weights& l : m.layers) {
    if (!quantizing) out.push_back(&l.router), out.push_back(&l.shared_expert_gate);
    for (weight* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) out.push_back(w);
    l.for_each_expert([&](expert_weights& e) {
      for (weight* w : {&e.gate, &e.up, &e.down}) out.push_back(w);
    });
  }
  std::erase_if(out, [format](const weight* w) { return w->empty() || w->type == target_of(*w, format); });
  return out;
}

}  // namespace

void model_convert_weights(model& m, weight_format format, load_progress* progress) {
  if (format == weight_format::as_stored) return;
  const bool tied = m.classifier == m.token_embedding;
  const std::vector<weight*> todo = matrices_to_convert(m, format);
  if (todo.empty()) return;  // stored in that format already
  std::uint64_t bytes_in = 0, bytes_out = 0;
  for (const weight* w : todo) bytes_in += w->n_bytes();
  const bool quantizing = format == weight_format::int8 || format == weight_format::int4;
  const std::string verb = quantizing ? "quantiz" : "convert";
  const std::string target = format == weight_format::int8   ? "int8"
                             : format == weight_format::int4 ? "int4 (" + std::string(dtype_name(model_int4_type)) + ")"
                                                             : std::string(dtype_name(target_of(*todo[0], format)));
  load_phase phase(verb + "ing weights to " + target);
  int n_fallback = 0;
  {
    load_progress::step step(progress, verb + "ing weights to " + target, static_cast<int>(todo.size()), bytes_in);
    for (weight* w : todo) {
      step.throw_if_cancelled();
      const std::uint64_t n = w->n_bytes();
      const dtype to = target_of(*w, format);
      n_fallback += format == weight_format::int4 && to == dtype::i8;
      *w = convert_matrix(m, *w, to, w != &m.token_embedding);
      bytes_out += w->n_bytes();
      step.advance(n);
    }
  }
  if (tied) m.classifier = m.token_embedding;
  if (n_fallback > 0)
    spdlog::info("int4: {} matrices have rows that are not whole {}-weight {} blocks: stored as int8 instead", n_fallback,
                 block_layout_of(model_int4_type).elements, dtype_name(model_int4_type));
  phase.finish(fmt::format("{}ed {} matrices to {} ({} -> {})", verb, todo.size(), target, bytes_text(bytes_in),
                           bytes_text(bytes_out)));
}

}  // namespace pagedserve
