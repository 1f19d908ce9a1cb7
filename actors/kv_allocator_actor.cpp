#include "actors/kv_allocator_actor.hpp"

#include "actors/logger.hpp"
#include "pagedserve/check.hpp"

namespace pagedserve {

kv_allocator_actor::kv_allocator_actor(const boost::asio::any_io_executor& ex, int n_blocks, int block_size,
                                       bool prefix_caching)
    : actor(ex), blocks_(n_blocks, block_size, prefix_caching), log_(actor_logger("kv")) {}

void kv_allocator_actor::on(allocate_step m) {
  step_allocated reply{m.step, std::nullopt, {}, {}, {}};
  for (std::size_t i = 0; i < m.needs.size(); ++i) {
    const kv_need& need = m.needs[i];
    const request_id seq = need.id;
    int n_cached = 0, n_tokens = need.n_tokens;
    // Admissions are idempotent: asked again (after another chunk was refused) they keep their first match.
    const bool admission = need.tokens && !blocks_.has_sequence(seq);
    int first_write = need.first_write;
    if (need.tokens) {
      if (admission && need.fork_from && blocks_.has_sequence(*need.fork_from)) {
        // A sample of a prompt another sequence computed: share its blocks, recompute the last token
        // (its own logits row), copy on write from there.
        blocks_.fork(*need.fork_from, seq, need.fork_tokens, need.fork_tokens - 1);
        n_cached = blocks_.n_matched_tokens(seq);
      } else {
        n_cached = admission ? blocks_.match_prefix(seq, *need.tokens, need.cache_salt) : blocks_.n_matched_tokens(seq);
      }
      n_tokens = std::min<int>(n_cached + need.n_tokens, static_cast<int>(need.tokens->size()));
      first_write = n_cached;
    }
    if (!blocks_.ensure_capacity(seq, n_tokens, first_write, copies_)) {
      if (admission) blocks_.free_sequence(seq);  // a refused admission holds nothing
      reply.refused = i;
      break;
    }
    reply.n_cached.push_back(n_cached);
    const auto& table = blocks_.table(seq);
    std::vector<std::int32_t> ids(table.size());
    for (std::size_t b = 0; b < table.size(); ++b) ids[b] = table[b].value;
    reply.tables.push_back(std::move(ids));
  }
  // Copies made while a refused plan is adjusted wait for the granted reply of this step.
  if (!reply.refused) {
    for (const auto& c : copies_) reply.block_copies.emplace_back(c.from.value, c.to.value);
    copies_.clear();
  }
  scheduler_->tell(std::move(reply));
}

void kv_allocator_actor::on(free_sequences m) {
  for (request_id id : m.ids) {
    // A pending copy into a block this sequence owned is void: the block may go to another.
    for (block_id b : blocks_.table(id))
      std::erase_if(copies_, [&](const block_manager::block_copy& c) { return c.to == b; });
    if (auto broken = blocks_.free_sequence(id)) [[unlikely]]
      log_->critical("request {}: KV bookkeeping broken on free, block left out of the pool: {}", id.value, *broken);
  }
  if (check_on_free_) {
    const auto violation = blocks_.find_invariant_violation();
    ps_check(!violation, violation ? *violation : "");
  }
  log_->debug("freed {} sequences, {} of {} blocks free", m.ids.size(), blocks_.n_blocks_free(),
              blocks_.n_blocks_total());
}

void kv_allocator_actor::on(commit_blocks m) {
  for (const auto& s : m.sequences) blocks_.commit_full_blocks(s.id, s.first_block, s.tokens);
}

void kv_allocator_actor::on(report_kv_status m) {
  m.reply({blocks_.n_blocks_total(), blocks_.n_blocks_free(), blocks_.n_blocks_cached(), blocks_.block_size(),
           blocks_.n_sequences(), blocks_.prefix_queries(), blocks_.prefix_hits(), blocks_.n_forks(),
           blocks_.n_block_copies()});
}

}  // namespace pagedserve
