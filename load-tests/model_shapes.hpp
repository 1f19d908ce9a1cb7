#pragma once
// The model shapes the benchmarks measure (random weights of these shapes, written by the
// benchmarks or make-random-model): stories110M's and TinyLlama 1.1B's.
#include "pagedserve/model.hpp"

namespace pagedserve::bench {

inline model_config s110m() {
  model_config c;
  c.dim = 768, c.hidden_dim = 2048, c.n_layers = 12, c.n_heads = 12, c.n_kv_heads = 12;
  c.vocab_size = 32000, c.seq_len = 1024, c.shared_classifier = true;
  return c;
}

inline model_config tinyllama() {
  model_config c;
  c.dim = 2048, c.hidden_dim = 5632, c.n_layers = 22, c.n_heads = 32, c.n_kv_heads = 4;
  c.vocab_size = 32000, c.seq_len = 2048, c.shared_classifier = false;
  return c;
}

}  // namespace pagedserve::bench
