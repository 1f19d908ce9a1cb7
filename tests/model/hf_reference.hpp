#pragma once
// A plain scalar forward pass written from the transformers modeling code of each architecture
// (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM):
// one sequence, contiguous KV, double precision, tensors looked up by their HF names. It shares no
// code with the engine, so it checks the loader's name mapping as well as the forward pass.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <string>
#include <vector>

#include "model/hf_test_model.hpp"

namespace pagedserve::test {

class hf_reference {
 public:
  hf_reference(const arch_spec& s, const tensor_map& t) : s_(s), t_(t) {}

  // Logits [tokens.size()][vocab]: the next-token logits after each prefix.
  std::vector<std::vector<double>> forward(const std::vector<int>& tokens) const {
    const int n = static_cast<int>(tokens.size()), hd = s_.hd(), qd = s_.heads * hd;
    std::vector<std::vector<double>> x(n);
    for (int p = 0; p < n; ++p) x[p] = row("model.embed_tokens.weight", tokens[p]);
    for (int l = 0; l < s_.layers; ++l) {
      const std::string at = "model.layers." + std::to_string(l) + ".";
      std::vector<std::vector<double>> q(n), k(n), v(n);
      for (int p = 0; p < n; ++p) {
        const auto h = rmsnorm(x[p], at + "input_layernorm.weight");
        q[p] = linear(at + "self_attn.q_proj", h, s_.qkv_bias || s_.attention_bias);
        k[p] = linear(at + "self_attn.k_proj", h, s_.qkv_bias || s_.attention_bias);
        v[p] = linear(at + "self_attn.v_proj", h, s_.qkv_bias || s_.attention_bias);
        if (s_.qk_norm) {
          head_norm(q[p], at + "self_attn.q_norm.weight");
          head_norm(k[p], at + "self_attn.k_norm.weight");
        }
        rotate_half_rope(q[p], p);
        rotate_half_rope(k[p], p);
      }
      for (int p = 0; p < n; ++p) {
        std::vector<double> att(qd, 0.0);
        for (int h = 0; h < s_.heads; ++h) {
          const int kvh = h / (s_.heads / s_.kv_heads);
          // transformers' sliding-window mask: key j is seen when j > p - window.
          const int w = s_.window(l), first = w > 0 ? std::max(0, p - w + 1) : 0;
          std::vector<double> scores(p + 1 - first);
          for (int j = first; j <= p; ++j) {
            double dot = 0.0;
            for (int i = 0; i < hd; ++i) dot += q[p][h * hd + i] * k[j][kvh * hd + i];
            scores[j - first] = dot / std::sqrt(static_cast<double>(hd));
          }
          softmax(scores);
          for (int j = first; j <= p; ++j)
            for (int i = 0; i < hd; ++i) att[h * hd + i] += scores[j - first] * v[j][kvh * hd + i];
        }
        add(x[p], linear(at + "self_attn.o_proj", att, s_.attention_bias));
      }
      for (int p = 0; p < n; ++p) {
        const auto h = rmsnorm(x[p], at + "post_attention_layernorm.weight");
        add(x[p], s_.moe_layer(l) ? moe(at, h) : swiglu_mlp(at + "mlp.", h));
      }
    }
    std::vector<std::vector<double>> logits(n);
    const std::string head = s_.tied ? "model.embed_tokens.weight" : "lm_head.weight";
    for (int p = 0; p < n; ++p) logits[p] = matvec(head, rmsnorm(x[p], "model.norm.weight"));
    return logits;
  }

  // transformers' rope_init_fn: default, or _compute_llama3_parameters.
  std::vector<double> inv_freq() const {
    const int hd = s_.hd();
    std::vector<double> inv(hd / 2);
    for (int i = 0; i < hd / 2; ++i) inv[i] = 1.0 / std::pow(s_.theta, 2.0 * i / hd);
    if (s_.yarn_scaling) return yarn(inv);
    if (!s_.llama3_scaling) return inv;
    const double low_wavelen = s_.original_max_pos / s_.low_freq_factor;
    const double high_wavelen = s_.original_max_pos / s_.high_freq_factor;
    for (double& f : inv) {
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen > low_wavelen) {
        f /= s_.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (s_.original_max_pos / wavelen - s_.low_freq_factor) /
                              (s_.high_freq_factor - s_.low_freq_factor);
        f = (1 - smooth) * f / s_.factor + smooth * f;
      }
    }
    return inv;
  }

 private:
  const std::vector<float>& values(const std::string& name) const { return t_.at(name).values; }

  std::vector<double> row(const std::string& name, int r) const {
    const auto& t = t_.at(name);
    const auto cols = static_cast<std::size_t>(t.shape[1]);
    return std::vector<double>(t.values.begin() + r * cols, t.values.begin() + (r + 1) * cols);
  }

  std::vector<double> matvec(const std::string& name, const std::vector<double>& x) const {
    const auto& t = t_.at(name);
    const auto rows = static_cast<std::size_t>(t.shape[0]), cols = static_cast<std::size_t>(t.shape[1]);
    std::vector<double> out(rows, 0.0);
    for (std::size_t o = 0; o < rows; ++o)
      for (std::size_t i = 0; i < cols; ++i) out[o] += t.values[o * cols + i] * x[i];
    return out;
  }

  std::vector<double> linear(const std::string& prefix, const std::vector<double>& x, bool bias) const {
    auto out = matvec(prefix + ".weight", x);
    if (bias)
      for (std::size_t i = 0; i < out.size(); ++i) out[i] += values(prefix + ".bias")[i];
    return out;
  }

  std::vector<double> rmsnorm(const std::vector<double>& x, const std::string& weight) const {
    double ss = 0.0;
    for (double v : x) ss += v * v;
    const double scale = 1.0 / std::sqrt(ss / x.size() + s_.eps);
    std::vector<double> out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) out[i] = values(weight)[i] * (x[i] * scale);
    return out;
  }

  // Qwen3: RMSNorm over each head_dim slice.
  void head_norm(std::vector<double>& x, const std::string& weight) const {
    const int hd = s_.hd();
    for (std::size_t h = 0; h * hd < x.size(); ++h) {
      std::vector<double> head(x.begin() + h * hd, x.begin() + (h + 1) * hd);
      head = rmsnorm(head, weight);
      std::copy(head.begin(), head.end(), x.begin() + h * hd);
    }
  }

  // q * cos + rotate_half(q) * sin, rotate_half(q) = cat(-q[half:], q[:half]).
  // transformers' _compute_yarn_parameters (beta_fast 32, beta_slow 1, truncate), in double.
  std::vector<double> yarn(std::vector<double> extrapolation) const {
    const double dim = s_.hd(), base = s_.theta;
    auto correction_dim = [&](double rot) {
      return dim * std::log(s_.original_max_pos / (rot * 2 * std::numbers::pi)) / (2 * std::log(base));
    };
    const double low = std::max(std::floor(correction_dim(32)), 0.0);
    double high = std::min(std::ceil(correction_dim(1)), dim - 1);
    if (low == high) high += 0.001;
    for (std::size_t i = 0; i < extrapolation.size(); ++i) {
      const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
      const double extrapolation_factor = 1 - ramp;
      extrapolation[i] = extrapolation[i] / s_.factor * (1 - extrapolation_factor) + extrapolation[i] * extrapolation_factor;
    }
    return extrapolation;
  }
  double attention_factor() const {
    if (!s_.yarn_scaling) return 1.0;
    return s_.yarn_attention_factor > 0 ? s_.yarn_attention_factor : 0.1 * std::log(s_.factor) + 1.0;
  }

  void rotate_half_rope(std::vector<double>& x, int pos) const {
    const int hd = s_.hd(), half = hd / 2;
    const auto inv = inv_freq();
    const double scale = attention_factor();  // yarn scales cos and sin
    for (std::size_t h = 0; h * hd < x.size(); ++h) {
      double* v = x.data() + h * hd;
      for (int i = 0; i < half; ++i) {
        const double c = std::cos(pos * inv[i]) * scale, s = std::sin(pos * inv[i]) * scale;
        const double a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = b * c + a * s;
      }
    }
  }

  static void softmax(std::vector<double>& x) {
    const double m = *std::max_element(x.begin(), x.end());
    double sum = 0.0;
    for (double& v : x) sum += (v = std::exp(v - m));
    for (double& v : x) v /= sum;
  }

  static void add(std::vector<double>& x, const std::vector<double>& y) {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += y[i];
  }

  std::vector<double> swiglu_mlp(const std::string& prefix, const std::vector<double>& x,
                                 const std::string& gate_name = "gate_proj.weight", const std::string& up_name = "up_proj.weight",
                                 const std::string& down_name = "down_proj.weight") const {
    auto gate = matvec(prefix + gate_name, x);
    const auto up = matvec(prefix + up_name, x);
    for (std::size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
    return matvec(prefix + down_name, gate);
  }

  // Qwen3MoeSparseMoeBlock / MixtralSparseMoeBlock: softmax router, top-k, optional renormalisation,
  // experts summed in id order; Qwen2MoeSparseMoeBlock then adds sigmoid(shared_expert_gate x) times its
  // shared expert.
  std::vector<double> moe(const std::string& layer, const std::vector<double>& x) const {
    const std::string prefix = layer + s_.moe_prefix();
    auto probs = matvec(prefix + "gate.weight", x);
    softmax(probs);
    std::vector<int> order(probs.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return probs[a] > probs[b]; });
    order.resize(s_.top_k);
    double sum = 0.0;
    for (int e : order) sum += probs[e];
    std::sort(order.begin(), order.end());
    std::vector<double> out(x.size(), 0.0);
    for (int e : order) {
      const double w = s_.norm_topk ? probs[e] / sum : probs[e];
      const auto y = swiglu_mlp(prefix + "experts." + std::to_string(e) + ".", x, s_.expert_gate(), s_.expert_up(),
                                s_.expert_down());
      for (std::size_t i = 0; i < out.size(); ++i) out[i] += w * y[i];
    }
    if (s_.shared_hidden > 0) {
      const double g = 1.0 / (1.0 + std::exp(-matvec(layer + "mlp.shared_expert_gate.weight", x)[0]));
      const auto y = swiglu_mlp(layer + "mlp.shared_expert.", x);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] += g * y[i];
    }
    return out;
  }

  const arch_spec& s_;
  const tensor_map& t_;
};

}  // namespace pagedserve::test
