#pragma once
// Logits [n, vocab] of every position of `ids`, run as one prefill step of one sequence through the
// real forward pass and paged KV cache (the model tests' way of comparing a model with a reference).
#include <vector>

#include "model/forward.hpp"
#include "pagedserve/kernels.hpp"
#include "kv/kv_cache.hpp"
#include "pagedserve/model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagedserve::test {

// The step that runs positions [first, ids.size()) of one sequence whose K/V holds [0, first), every
// position's logits kept, its slots in blocks 0, 1, ... of the cache.
inline step_batch one_sequence_step(const std::vector<token_id>& ids, int first, int block_size) {
  const int n = static_cast<int>(ids.size());
  step_batch b;
  b.seq_block_offset = {0};
  for (int blk = 0; blk * block_size < n; ++blk) b.block_tables.push_back(blk);
  for (int p = first; p < n; ++p) {
    b.logits_rows.push_back(b.n_tokens());
    b.tokens.push_back(ids[p]);
    b.positions.push_back(p);
    b.seq_of_token.push_back(0);
    b.slots.push_back(p);
  }
  return b;
}

inline std::vector<float> prefill_logits(const model& m, const kernels::kernel_table& kt, const std::vector<token_id>& ids) {
  const model_config& c = m.config;
  constexpr int block_size = 16;
  const int n = static_cast<int>(ids.size());
  kv_cache cache(c.n_layers, (n + block_size - 1) / block_size, block_size, c.n_kv_heads, c.head_size());
  forward_pass forward(m, kt, n);
  const float* logits = forward.run(one_sequence_step(ids, 0, block_size), cache);
  return {logits, logits + static_cast<std::size_t>(n) * c.vocab_size};
}

}  // namespace pagedserve::test
