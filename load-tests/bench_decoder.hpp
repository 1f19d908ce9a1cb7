#pragma once
// Decode steps of a loaded model for the benchmarks: `streams` sequences, each with its own KV
// blocks and a `prefix` of context filled at construction; every step() decodes one token of each.
// Positions cycle through [prefix, context) so the KV pool stays small and attention cost steady:
// perf_sweep.sh's requests (101-token prompts, 128 output tokens), so the attention share is the server's.
#include <algorithm>
#include <cstdint>

#include "bench_table.hpp"
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
        fwd_(m, bench_kernel_table(), std::max(streams, prefix)) {
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

  // Steps add their phases' wall times to *times (nullptr: not timed).
  void set_phase_times(forward_phase_times* times) { fwd_.set_phase_times(times); }

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
      const auto& sh = l.shared_expert;
      if (l.has_shared_expert()) per_token += size(l.shared_expert_gate) + size(sh.gate) + size(sh.up) + size(sh.down);
    }
    return 2.0 * streams_ * per_token;
  }

  // Bytes of weights one decode step reads (model_step_weight_bytes): the chosen experts are approximated
  // by all experts any token could pick (min(streams * top_k, n_experts)) per MoE layer.
  double bytes_per_step() const { return model_step_weight_bytes(m_, streams_); }

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
  int pos_ = 0;
};

}  // namespace pagedserve::bench
