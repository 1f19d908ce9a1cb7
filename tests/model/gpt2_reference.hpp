#pragma once
// A plain scalar GPT-2 written from transformers' modeling_gpt2.py (GPT2Model, GPT2Block,
// GPT2Attention._attn, GPT2MLP, Conv1D) and activations.py's NewGELUActivation: one sequence, contiguous
// KV, double precision, tensors looked up by their HF names (Conv1D weights [in, out], as stored). It
// shares no code with the engine, so it checks the loaders' transposition and split of c_attn too.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "model/gpt2_test_model.hpp"

namespace pagedserve::test {

class gpt2_reference {
 public:
  gpt2_reference(const gpt2_spec& s, const tensor_map& t) : s_(s), t_(t) {}

  // Logits [tokens.size()][vocab]: the next-token logits after each prefix.
  std::vector<std::vector<double>> forward(const std::vector<int>& tokens) const {
    const int n = static_cast<int>(tokens.size()), dim = s_.dim, hd = s_.hd();
    std::vector<std::vector<double>> h(n);
    for (int p = 0; p < n; ++p) {  // inputs_embeds + position_embeds
      h[p] = row("wte.weight", tokens[p]);
      const auto pos = row("wpe.weight", p);
      for (int i = 0; i < dim; ++i) h[p][i] += pos[i];
    }
    for (int l = 0; l < s_.layers; ++l) {
      const std::string at = "h." + std::to_string(l) + ".";
      std::vector<std::vector<double>> q(n), k(n), v(n);
      for (int p = 0; p < n; ++p) {  // c_attn(ln_1(h)).split(n_embd)
        const auto qkv = conv1d(at + "attn.c_attn", layer_norm(h[p], at + "ln_1"));
        q[p].assign(qkv.begin(), qkv.begin() + dim);
        k[p].assign(qkv.begin() + dim, qkv.begin() + 2 * dim);
        v[p].assign(qkv.begin() + 2 * dim, qkv.end());
      }
      for (int p = 0; p < n; ++p) {
        std::vector<double> att(dim, 0.0);
        for (int head = 0; head < s_.heads; ++head) {
          std::vector<double> w(p + 1);  // causal: keys 0..p
          for (int j = 0; j <= p; ++j) {
            double dot = 0.0;
            for (int i = 0; i < hd; ++i) dot += q[p][head * hd + i] * k[j][head * hd + i];
            w[j] = dot / std::sqrt(static_cast<double>(hd));  // scale_attn_weights: / sqrt(head_dim)
          }
          softmax(w);
          for (int j = 0; j <= p; ++j)
            for (int i = 0; i < hd; ++i) att[head * hd + i] += w[j] * v[j][head * hd + i];
        }
        add(h[p], conv1d(at + "attn.c_proj", att));
      }
      for (int p = 0; p < n; ++p) {  // h + c_proj(gelu_new(c_fc(ln_2(h))))
        auto m = conv1d(at + "mlp.c_fc", layer_norm(h[p], at + "ln_2"));
        for (double& x : m) x = gelu_new(x);
        add(h[p], conv1d(at + "mlp.c_proj", m));
      }
    }
    std::vector<std::vector<double>> logits(n);
    for (int p = 0; p < n; ++p) logits[p] = lm_head(layer_norm(h[p], "ln_f"));
    return logits;
  }

  // Greedy continuation of prompt by `steps` tokens (the first largest logit wins ties, as argmax).
  std::vector<int> greedy(std::vector<int> tokens, int steps) const {
    for (int i = 0; i < steps; ++i) {
      const auto logits = forward(tokens).back();
      tokens.push_back(static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    }
    return tokens;
  }

  static double gelu_new(double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
  }

 private:
  const test_tensor& at(const std::string& name) const { return t_.at(name); }

  std::vector<double> row(const std::string& name, int r) const {
    const auto& t = at(name);
    const auto cols = static_cast<std::size_t>(t.shape[1]);
    return std::vector<double>(t.values.begin() + r * cols, t.values.begin() + (r + 1) * cols);
  }

  // Conv1D.forward: x @ weight + bias, weight [nx, nf].
  std::vector<double> conv1d(const std::string& prefix, const std::vector<double>& x) const {
    const auto& w = at(prefix + ".weight");
    const auto& b = at(prefix + ".bias");
    const std::size_t nx = w.shape[0], nf = w.shape[1];
    std::vector<double> out(b.values.begin(), b.values.end());
    for (std::size_t i = 0; i < nx; ++i)
      for (std::size_t j = 0; j < nf; ++j) out[j] += x[i] * w.values[i * nf + j];
    return out;
  }

  // nn.LayerNorm: biased variance, eps inside the square root.
  std::vector<double> layer_norm(const std::vector<double>& x, const std::string& prefix) const {
    double mean = 0.0, var = 0.0;
    for (double v : x) mean += v;
    mean /= static_cast<double>(x.size());
    for (double v : x) var += (v - mean) * (v - mean);
    var /= static_cast<double>(x.size());
    const auto& w = at(prefix + ".weight").values;
    const auto& b = at(prefix + ".bias").values;
    std::vector<double> out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) out[i] = (x[i] - mean) / std::sqrt(var + s_.eps) * w[i] + b[i];
    return out;
  }

  // lm_head is an nn.Linear (weight [vocab, n_embd]), tied to wte unless tie_word_embeddings is false.
  std::vector<double> lm_head(const std::vector<double>& x) const {
    const auto& w = at(s_.tied ? "wte.weight" : "lm_head.weight");
    std::vector<double> out(s_.vocab, 0.0);
    for (int o = 0; o < s_.vocab; ++o)
      for (int i = 0; i < s_.dim; ++i) out[o] += w.values[static_cast<std::size_t>(o) * s_.dim + i] * x[i];
    return out;
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

  const gpt2_spec& s_;
  const tensor_map& t_;
};

}  // namespace pagedserve::test
