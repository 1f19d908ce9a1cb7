#pragma once
// Decode steps of a loaded model for the benchmarks: `streams` sequences, each with its own KV
// blocks and a `prefix` of context filled at construction; every step() decodes one token of each.
// Positions cycle through [prefix, context) so the KV pool stays small and attention cost steady:
// perf_sweep.sh's requests (101-token prompts, 128 output tokens), so the attention share is the server's.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "model/forward.hpp"
#include "kv/kv_cache.hpp"
#include "pagedserve/model.hpp"

namespace pagedserve::bench {

constexpr int block_size = 16;
constexpr int prefix = 101;                                      // perf_sweep.sh's prompt
constexpr int context = prefix + 128;                            // and its 128 output tokens
constexpr int blocks_per_seq = (context + block_size - 1) / block_size;

// Runs decode steps for `streams` sequences, each with its own blocks; positions advance per step.
class decoder {
 public:
  decoder(const model& m, int streams, dtype kv_type = dtype::f32)
      : m_(m),
        streams_(streams),
        cache_(m.config.n_layers, streams * blocks_per_seq, block_size, m.config.n_kv_heads, m.config.head_size(),
               kv_type),
        fwd_(m, *kernels::kernel_table_select(), std::max(streams, prefix)),
        phase_x_(static_cast<std::size_t>(streams) * std::max({m.config.dim, m.config.hidden_dim, m.config.q_dim()}), 0.5f),
        phase_out_(static_cast<std::size_t>(streams) *
                   std::max({m.config.vocab_size, 2 * m.config.hidden_dim, m.config.q_dim() + 2 * m.config.kv_dim()})) {
    for (int s = 0; s < streams; ++s) {  // fill each sequence's first `prefix` positions
      step_batch b = batch_for(s, 0, prefix);
      fwd_.run(b, cache_);
    }
    pos_ = prefix;
  }

  // One decode step; the logits, one row of vocab_size per stream.
  float* step() {
    step_batch b;
    for (int s = 0; s < streams_; ++s) append(b, s, pos_, 1);
    float* logits = fwd_.run(b, cache_);
    if (++pos_ == context) pos_ = prefix;
    return logits;
  }

  // Only the matmuls of one decode step, as forward_pass groups them (Q/K/V, output, gate/up, down,
  // classifier), on a constant input: the matmul phase's time alone (docs/roofline.md). Dense SwiGLU
  // layers only: false, and nothing run, for MoE or GELU models.
  bool step_matmuls() {
    namespace ops = kernels::ops;
    const kernels::kernel_table& kt = *kernels::kernel_table_select();
    if (m_.config.ffn != ffn_kind::swiglu) return false;
    for (const layer_weights& l : m_.layers)
      if (l.is_moe()) return false;
    const float* x = phase_x_.data();
    float* out = phase_out_.data();
    const std::size_t q = static_cast<std::size_t>(streams_) * m_.config.q_dim();
    const std::size_t kv = static_cast<std::size_t>(streams_) * m_.config.kv_dim();
    const std::size_t hid = static_cast<std::size_t>(streams_) * m_.config.hidden_dim;
    for (const layer_weights& l : m_.layers) {
      const ops::matmul_output qkv[] = {{out, l.wq}, {out + q, l.wk}, {out + q + kv, l.wv}};
      ops::matmul_group(kt, qkv, x, streams_);
      ops::matmul(kt, out, x, l.wo, streams_);
      const ops::matmul_output gate_up[] = {{out, l.w_gate}, {out + hid, l.w_up}};
      ops::matmul_group(kt, gate_up, x, streams_);
      ops::matmul(kt, out, x, l.w_down, streams_);
    }
    ops::matmul(kt, out, x, m_.classifier, streams_);
    return true;
  }

  // Only the attention of one decode step at the current positions: every layer's paged_attention over
  // this decoder's cache, the query a constant (the phase's time alone).
  void step_attention() {
    const model_config& c = m_.config;
    step_batch b;
    for (int s = 0; s < streams_; ++s) append(b, s, pos_, 1);
    kernels::attention_batch ab;
    ab.seq_of_token = b.seq_of_token.data();
    ab.pos_of_token = b.positions.data();
    ab.block_tables = b.block_tables.data();
    ab.seq_block_offset = b.seq_block_offset.data();
    ab.n_tokens = b.n_tokens();
    ab.max_context = pos_ + 1;
    for (int l = 0; l < c.n_layers; ++l) {
      ab.window = c.attention_window(l);
      kernels::ops::paged_attention(*kernels::kernel_table_select(), phase_out_.data(), phase_x_.data(), cache_.layer(l),
                                    ab, c.n_heads, c.n_kv_heads, c.head_size());
    }
  }

  // Bytes of K/V one decode step reads, averaged over the cycle of positions: each stream's token at
  // pos attends pos + 1 positions, in every layer and kv head (keys, values and their scales).
  double kv_bytes_per_step() const {
    const model_config& c = m_.config;
    const double mean_attended = (prefix + 1 + context) / 2.0;
    return streams_ * mean_attended * static_cast<double>(kv_cache::bytes_per_token(c.n_layers, c.n_kv_heads, c.head_size(), cache_.type()));
  }

  // Operations (2 per multiply-add) of one decode step's matmuls: every token through every matrix
  // and the classifier, MoE layers counted with each token's top-k experts.
  double matmul_ops_per_step() const {
    const model_config& c = m_.config;
    const auto size = [](const weight& w) { return static_cast<double>(w.rows) * w.cols; };
    double per_token = size(m_.classifier);
    for (const layer_weights& l : m_.layers) {
      per_token += size(l.wq) + size(l.wk) + size(l.wv) + size(l.wo);
      if (!l.is_moe()) {
        per_token += size(l.w_gate) + size(l.w_up) + size(l.w_down);
        continue;
      }
      const auto& e = l.experts[0];
      per_token += size(l.router) + c.n_experts_used * (size(e.gate) + size(e.up) + size(e.down));
    }
    return 2.0 * streams_ * per_token;
  }

  // Bytes of weights one decode step reads: the chosen experts are approximated by all experts any
  // token could pick (min(streams * top_k, n_experts)) per MoE layer.
  double bytes_per_step() const {
    const model_config& c = m_.config;
    double total = static_cast<double>(m_.classifier.n_bytes());
    for (const layer_weights& l : m_.layers) {
      total += static_cast<double>(l.wq.n_bytes() + l.wk.n_bytes() + l.wv.n_bytes() + l.wo.n_bytes());
      if (!l.is_moe()) {
        total += static_cast<double>(l.w_gate.n_bytes() + l.w_up.n_bytes() + l.w_down.n_bytes());
        continue;
      }
      const int used = std::min(streams_ * c.n_experts_used, c.n_experts);
      const auto& e = l.experts[0];
      total += static_cast<double>(l.router.n_bytes()) + used * static_cast<double>(e.gate.n_bytes() + e.up.n_bytes() + e.down.n_bytes());
    }
    return total;
  }

 private:
  void append(step_batch& b, int s, int first, int count) const {
    if (b.seq_block_offset.size() <= static_cast<std::size_t>(s)) b.seq_block_offset.resize(s + 1, 0);
    b.seq_block_offset[s] = static_cast<std::int32_t>(b.block_tables.size());
    for (int k = 0; k < blocks_per_seq; ++k) b.block_tables.push_back(s * blocks_per_seq + k);
    for (int p = first; p < first + count; ++p) {
      b.logits_rows.push_back(b.n_tokens());
      b.tokens.push_back((p * 7919 + s * 104729) % m_.config.vocab_size);
      b.positions.push_back(p);
      b.seq_of_token.push_back(static_cast<std::int32_t>(b.seq_block_offset.size() - 1));
      b.slots.push_back((s * blocks_per_seq + p / block_size) * block_size + p % block_size);
    }
  }
  step_batch batch_for(int s, int first, int count) const {
    step_batch b;
    append(b, s, first, count);
    b.seq_of_token.assign(b.tokens.size(), 0);
    b.seq_block_offset = {0};
    return b;
  }

  const model& m_;
  int streams_;
  kv_cache cache_;
  forward_pass fwd_;
  std::vector<float> phase_x_;    // step_matmuls' and step_attention's input: [streams, widest input]
  std::vector<float> phase_out_;  // and their output: [streams, widest output]
  int pos_ = 0;
};

}  // namespace pagedserve::bench
