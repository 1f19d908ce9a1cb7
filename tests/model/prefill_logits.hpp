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

inline std::vector<float> prefill_logits(const model& m, const kernels::kernel_table& kt, const std::vector<token_id>& ids) {
  const model_config& c = m.config;
  constexpr int block_size = 16;
  const int n = static_cast<int>(ids.size());
  kv_cache cache(c.n_layers, (n + block_size - 1) / block_size, block_size, c.n_kv_heads, c.head_size());
  forward_pass forward(m, kt, n);
  step_batch b;
  b.tokens = ids;
  b.seq_block_offset = {0};
  for (int p = 0; p < n; ++p) {
    b.positions.push_back(p);
    b.seq_of_token.push_back(0);
    b.slots.push_back(p);
    b.logits_rows.push_back(p);
    if (p % block_size == 0) b.block_tables.push_back(p / block_size);
  }
  const float* logits = forward.run(b, cache);
  return {logits, logits + static_cast<std::size_t>(n) * c.vocab_size};
}

}  // namespace pagedserve::test
