#include "actors/executor_actor.hpp"

#include <tbb/parallel_for.h>

#include <thread>

#include "actors/logger.hpp"
#include "grammar/grammar_constraint.hpp"
#include "grammar/output_format_compiler.hpp"
#include "pagedserve/check.hpp"

namespace pagedserve {
executor_actor::executor_actor(const boost::asio::any_io_executor& ex, std::shared_ptr<const model> m,
                               const executor_options& o)
    : actor(ex),
      model_(std::move(m)),
      cache_(model_->config.n_layers, o.n_blocks, o.block_size, model_->config.n_kv_heads, model_->config.head_size(), o.kv_type),
      forward_(*model_, *o.kernels, o.max_tokens_per_step),
      arena_(o.threads > 0 ? o.threads : tbb::task_arena::automatic),
      draft_(o.draft ? std::make_unique<draft_proposer>(o.draft, *o.kernels, o.n_blocks, o.block_size, o.kv_type,
                                                        o.max_tokens_per_step)
                     : nullptr),
      vocabulary_(o.vocabulary),
      log_(actor_logger("exec")) {
  log_->info("KV cache: {} blocks of {} tokens, {} elements, {:.1f} MiB; kernels {}; arena {} threads", o.n_blocks,
             o.block_size, dtype_name(cache_.type()), cache_.bytes() / 1048576.0, kernels::isa_name(o.kernels->which), arena_.max_concurrency());
}

void executor_actor::start_sequence(const sequence_started& s) {
  sampler& created = samplers_.insert_or_assign(s.id, sampler(*s.params, s.seed, s.prompt)).first->second;
  if (s.params->format.type == output_format::kind::none || !vocabulary_) return;
  // The API compiled (and cached) this format when it validated the request: this is a lookup.
  auto g = grammar::compile_output_format_cached(s.params->format);
  if (!g) {
    log_->error("request {}: output format does not compile: {}", s.id.value, g.error());
    return;
  }
  created.constrain(std::make_unique<grammar::grammar_constraint>(*g, vocabulary_));
}

void executor_actor::on(execute_step m) {
  using clock = std::chrono::steady_clock;
  // The previous step's tokens woke request actors and sockets on the network threads. Steps of a few
  // milliseconds leave them time (they preempt a kernel thread), but a step shorter than a scheduler
  // tick (a tiny model) would follow the next without ever letting them run, and a stream would reach
  // its client as one chunk: then hand them this core first. A yield under load costs a time slice,
  // so real models' steps never take it.
  if (m.follows_step && last_step_busy_ < std::chrono::milliseconds(1)) std::this_thread::yield();
  const auto received = clock::now();
  if (m.follows_step && last_step_end_ != clock::time_point{})
    gap_ns_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(received - last_step_end_).count(),
                      std::memory_order_relaxed);
  for (request_id id : m.dropped) samplers_.erase(id);
  for (const sequence_started& s : m.started) start_sequence(s);

  for (const auto& [from, to] : m.block_copies) {
    cache_.copy_block(from, to);
    if (draft_) draft_->copy_block(from, to);
  }

  step_executed reply{m.step, {}, {}};
  const std::size_t chunks = m.sample_for.size();
  ps_check(m.proposed.empty() || m.proposed.size() == chunks, "executor: proposals for no sampling chunk");
  std::vector<sampler*> chunk_samplers(chunks);
  std::vector<std::size_t> first_row(chunks + 1, 0);  // a chunk with k proposals has k + 1 logits rows
  for (std::size_t c = 0; c < chunks; ++c) {
    auto it = samplers_.find(m.sample_for[c]);
    ps_check(it != samplers_.end(), "executor: sampling a sequence it was never told about");
    chunk_samplers[c] = &it->second;
    first_row[c + 1] = first_row[c] + 1 + (m.proposed.empty() ? 0 : m.proposed[c].size());
  }
  std::vector<std::vector<token_id>> chunk_tokens(chunks);
  std::vector<std::vector<std::optional<token_logprobs>>> chunk_logprobs(chunks);
  draft_proposals drafts;  // a draft model's proposals replace the plan's placeholders
  arena_.execute([&] {
    const step_batch* batch = m.batch.get();
    step_batch drafted;
    if (draft_ && std::ranges::find(m.draft_mirrors, 1) != m.draft_mirrors.end()) {
      drafted = *m.batch;
      std::vector<draft_request> requests(chunks);
      for (std::size_t c = 0; c < chunks; ++c)
        requests[c] = {m.batch->logits_rows[first_row[c]], static_cast<int>(first_row[c + 1] - first_row[c]) - 1,
                       chunk_samplers[c]->temperature()};
      drafts = draft_->propose(drafted, requests, m.draft_mirrors);
      if (!m.proposed.empty()) m.proposed = drafts.tokens;
      batch = &drafted;
    }
    float* logits = forward_.run(*batch, cache_);
    const int vocab = model_->config.vocab_size;
    // Each chunk has its own sampler and random stream, so chunks sample in parallel, in any order,
    // with the same result. Within a chunk, rows go in order: each proposal is verified after the
    // ones before it were accepted (their tokens in the penalties), and the first rejection ends it.
    tbb::parallel_for(std::size_t{0}, chunks, [&](std::size_t c) {
      sampler& s = *chunk_samplers[c];
      const std::span<const token_id> proposed =
          m.proposed.empty() ? std::span<const token_id>{} : std::span<const token_id>(m.proposed[c]);
      for (std::size_t k = 0; k <= proposed.size(); ++k) {
        float* row = logits + (first_row[c] + k) * vocab;
        std::optional<token_logprobs> lp;
        if (s.wants_logprobs()) lp.emplace();
        const std::span<const float> q = draft_ && k < proposed.size() ? std::span<const float>(drafts.q[c][k])
                                                                        : std::span<const float>{};
        const token_id t = k < proposed.size() ? s.sample_proposed(row, vocab, proposed[k], lp ? &*lp : nullptr, q)
                                               : s.sample(row, vocab, lp ? &*lp : nullptr);
        chunk_tokens[c].push_back(t);
        chunk_logprobs[c].push_back(std::move(lp));
        if (k < proposed.size() && t != proposed[k]) break;
      }
    });
  });
  for (std::size_t c = 0; c < chunks; ++c) {
    reply.sampled.insert(reply.sampled.end(), chunk_tokens[c].begin(), chunk_tokens[c].end());
    for (auto& lp : chunk_logprobs[c]) reply.logprobs.push_back(std::move(lp));
  }
  last_step_end_ = clock::now();
  const auto busy = last_step_end_ - received;
  last_step_busy_ = busy;
  busy_ns_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(busy).count(), std::memory_order_relaxed);
  reply.compute_seconds = std::chrono::duration<double>(busy).count();
  if (draft_) reply.drafted = std::move(m.proposed);
  scheduler_->tell(std::move(reply));
}

}  // namespace pagedserve
