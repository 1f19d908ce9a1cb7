#include "model/generator.hpp"

#include <algorithm>

#include "kv/block_manager.hpp"
#include "pagedserve/check.hpp"
#include "model/forward.hpp"
#include "kv/kv_cache.hpp"

namespace pagedserve {

generation generate_sequence(const model& m, const tokenizer& tok, const kernels::kernel_table& kt,
                             const std::vector<token_id>& prompt_ids, const sampling_params& params,
                             std::uint64_t seed, const std::function<void(std::string_view)>& on_text,
                             int prefill_chunk, dtype kv_type, std::unique_ptr<token_constraint> constraint) {
  const model_config& c = m.config;
  ps_check(!prompt_ids.empty(), "generate_sequence: empty prompt (BOS expected)");
  constexpr int block_size = 16;
  const int n_blocks = (c.seq_len + block_size) / block_size;
  const request_id seq{1};
  block_manager blocks(n_blocks, block_size);
  kv_cache cache(c.n_layers, n_blocks, block_size, c.n_kv_heads, c.head_size(), kv_type);
  const int chunk = prefill_chunk > 0 ? prefill_chunk : static_cast<int>(prompt_ids.size());
  forward_pass forward(m, kt, std::max(1, std::min(chunk, static_cast<int>(prompt_ids.size()))));
  sampler sample(params, seed);
  if (constraint) sample.constrain(std::move(constraint));
  incremental_detokenizer detok(tok, prompt_ids.back());

  generation g{prompt_ids, {}, false};
  std::vector<token_id> tokens = prompt_ids;
  const int max_new = params.max_tokens > 0 ? params.max_tokens : c.seq_len;
  int n_computed = 0;
  while (true) {
    const int n = std::min(chunk, static_cast<int>(tokens.size()) - n_computed);
    ps_check(blocks.ensure_capacity(seq, n_computed + n), "generate_sequence: KV pool too small");
    const bool samples = n_computed + n == static_cast<int>(tokens.size());
    step_batch b;
    b.add_chunk(tokens, n_computed, n, blocks.table(seq), block_size, samples);
    n_computed += n;
    float* logits = forward.run(b, cache);
    if (!samples) continue;

    const token_id next = sample.sample(logits, c.vocab_size);
    g.generated.push_back(next);
    const auto& eos = m.generation.eos_token_ids;
    const bool is_stop = !params.ignore_eos && (next == tok.eos_id() || std::find(eos.begin(), eos.end(), next) != eos.end());
    if (is_stop) {
      g.stopped = true;
      break;
    }
    if (on_text) on_text(detok.push(next));
    if (static_cast<int>(g.generated.size()) >= max_new || static_cast<int>(tokens.size()) >= c.seq_len) break;
    tokens.push_back(next);
  }
  if (on_text) on_text(detok.flush());
  return g;
}

}  // namespace pagedserve
