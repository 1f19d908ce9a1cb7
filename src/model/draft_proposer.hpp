#pragma once
// Speculative decoding's draft model: a small model with the target's tokenizer that proposes the
// tokens the target then verifies in one step. Its K/V live in a cache of its own with the same
// blocks as the target's: block b of the pool holds the target's K/V in the target's cache and the
// draft's in this one (the pool's size charges both, kv_pool_plan), so the block manager's tables,
// copy-on-write, rollback (truncate) and prefix cache cover the draft with nothing more.
//
// The draft mirrors the target's rows only for the sequences that may still propose (mirrors[seq]);
// for them, after every step the draft's K/V are valid exactly where the target's are: it mirrors
// their prefill chunks and plain decodes in its first forward, and for a verification chunk (the
// sequence's last token t at position f, then k proposals) it runs
//   forward 1: t at f        -> d1         (batched with the mirrored rows)
//   forward j: d(j-1) at f+j-1 -> dj       (j = 2..k, one row per speculating sequence)
//   forward k+1: dk at f+k                  (no logits: the K/V of dk, which the target may accept)
// so whatever prefix of d1..dk the target accepts, the draft has its K/V: a mirrored sequence never
// has anything to catch up on. A sequence the scheduler stops mirroring ("lapses", schedule_step.cpp)
// leaves gaps in its draft K/V and never proposes again; a cached block it wrote lacks the block
// manager's draft K/V mark, so a later prompt reusing it starts lapsed too. A step where no sequence
// is mirrored does not run the draft at all.
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "kv/kv_cache.hpp"
#include "model/forward.hpp"
#include "pagedserve/step_batch.hpp"

namespace pagedserve {

// One verification chunk of the target's step.
struct draft_request {
  int last_row = 0;         // row of the sequence's last token in the target's batch; its proposals follow it
  int n_proposals = 0;      // k: rows last_row+1 .. last_row+k are the proposals' (their tokens are placeholders)
  float temperature = 0;    // <= 0: greedy draft (argmax); else sampled from softmax(logits / temperature)
};

struct draft_proposals {
  std::vector<std::vector<token_id>> tokens;             // per request, its k proposals
  // Per request and proposal, the draft's distribution q the proposal was drawn from ([vocab]); empty
  // for a greedy draft (a point mass on the proposal).
  std::vector<std::vector<std::vector<float>>> q;
};

class draft_proposer {
 public:
  draft_proposer(std::shared_ptr<const model> draft, const kernels::kernel_table& kt, int n_blocks, int block_size,
                 dtype kv_type, int max_tokens_per_step, std::uint64_t seed = 0);

  // Runs the draft over the target's step (mirroring the rows of each batch sequence s with
  // mirrors[s], see above) and writes each request's proposals into `batch`'s proposal rows.
  draft_proposals propose(step_batch& batch, std::span<const draft_request> requests, std::span<const char> mirrors);
  void copy_block(int from, int to) { cache_.copy_block(from, to); }
  const kv_cache& cache() const { return cache_; }

 private:
  token_id draw(const float* logits, float temperature, std::vector<float>* q);

  std::shared_ptr<const model> model_;
  kv_cache cache_;
  forward_pass forward_;
  std::mt19937_64 rng_;  // draws of sampled (temperature > 0) drafts
};

}  // namespace pagedserve
