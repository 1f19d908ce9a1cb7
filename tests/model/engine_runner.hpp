#pragma once
// Runs a loaded model through forward_pass the way the scheduler would: two sequences sharing paged
// steps (prefill chunks and decodes mixed), so model tests check logits of the real engine path.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "model/forward.hpp"
#include "kv/kv_cache.hpp"
#include "pagedserve/model.hpp"

namespace pagedserve::test {

// Logits of every token of two sequences run through three shared steps: A's prefill with B's first
// chunk, B's second chunk with A's first decode, then one decode each. Blocks of 4 tokens, shuffled.
// Returns [sequence][position][vocab].
inline std::vector<std::vector<std::vector<float>>> run_engine(const model& m, const kernels::kernel_table& kt,
                                                               const std::vector<int>& a, const std::vector<int>& b) {
  constexpr int block_size = 4;
  const std::vector<std::vector<int>> seqs = {a, b};
  const std::vector<std::vector<std::int32_t>> tables = {{5, 2}, {7, 0}};
  kv_cache cache(m.config.n_layers, 8, block_size, m.config.n_kv_heads, m.config.head_size());
  forward_pass fwd(m, kt, 8);
  std::vector<std::vector<std::vector<float>>> out(2);
  out[0].resize(a.size());
  out[1].resize(b.size());
  // (sequence, first position, count) per step.
  const std::vector<std::vector<std::array<int, 3>>> steps = {{{0, 0, 6}, {1, 0, 2}}, {{1, 2, 2}, {0, 6, 1}}, {{0, 7, 1}, {1, 4, 1}}};
  for (const auto& step : steps) {
    step_batch batch;
    batch.block_tables = {5, 2, 7, 0};
    batch.seq_block_offset = {0, 2};
    for (const auto& [s, first, count] : step)
      for (int p = first; p < first + count; ++p) {
        batch.logits_rows.push_back(batch.n_tokens());
        batch.tokens.push_back(seqs[s][p]);
        batch.positions.push_back(p);
        batch.seq_of_token.push_back(s);
        batch.slots.push_back(tables[s][p / block_size] * block_size + p % block_size);
      }
    const float* logits = fwd.run(batch, cache);
    const int vocab = m.config.vocab_size;
    for (int r = 0; r < batch.n_tokens(); ++r)
      out[batch.seq_of_token[r]][batch.positions[r]].assign(logits + r * vocab, logits + (r + 1) * vocab);
  }
  return out;
}

// Largest |got - want| over every logit of both sequences.
inline double engine_max_diff(const std::vector<std::vector<std::vector<float>>>& got,
                              const std::vector<std::vector<double>>& want_a,
                              const std::vector<std::vector<double>>& want_b) {
  double worst = 0.0;
  for (int seq = 0; seq < 2; ++seq) {
    const auto& want = seq == 0 ? want_a : want_b;
    for (std::size_t p = 0; p < want.size(); ++p)
      for (std::size_t v = 0; v < want[p].size(); ++v)
        worst = std::max(worst, std::abs(static_cast<double>(got[seq][p][v]) - want[p][v]));
  }
  return worst;
}

}  // namespace pagedserve::test
