#include "actors/kv_allocator_actor.hpp"

#include "actors/logger.hpp"
#include "pagedserve/check.hpp"

namespace pagedserve {

kv_allocator_actor::kv_allocator_actor(const boost::asio::any_io_executor& ex, int n_blocks, int block_size,
                                       bool prefix_caching)
    : actor(ex), blocks_(n_blocks, block_size, prefix_caching), log_(actor_logger("kv")) {}

void kv_allocator_actor::on(schedule_next_step m) {
  step_scheduled reply{m.step, std::move(m.state), {}, {}};
  if (m.previous)
    reply.previous = apply_step_result(*reply.state, blocks_, m.previous->sampled, m.previous->compute_seconds);
  reply.plan = schedule_step(*reply.state, blocks_);
  report(reply.previous.freed);
  report(reply.plan.freed);
  if (check_every_step_) check_invariants();
  if (!reply.plan.preempted.empty())
    log_->debug("step {}: KV pool full, {} sequences preempted", m.step.value, reply.plan.preempted.size());
  if (board_) board_->publish(pool_status());
  scheduler_->tell(std::move(reply));
}

void kv_allocator_actor::report(const blocks_freed& freed) {
  for (const std::string& fault : freed.faults) [[unlikely]]
    log_->critical("KV bookkeeping broken on free, block left out of the pool: {}", fault);
  if (freed.ids.empty()) return;
  if (check_on_free_) check_invariants();
  log_->debug("freed {} sequences, {} of {} blocks free", freed.ids.size(), blocks_.n_blocks_free(),
              blocks_.n_blocks_total());
}

void kv_allocator_actor::check_invariants() const {
  const auto violation = blocks_.find_invariant_violation();
  ps_check(!violation, violation ? *violation : "");
}

kv_pool_status kv_allocator_actor::pool_status() const {
  return {blocks_.n_blocks_total(), blocks_.n_blocks_free(), blocks_.n_blocks_cached(), blocks_.block_size(),
          blocks_.n_sequences(), blocks_.prefix_queries(), blocks_.prefix_hits(), blocks_.n_forks(),
          blocks_.n_block_copies()};
}

void kv_allocator_actor::on(report_kv_status m) { m.reply(pool_status()); }

}  // namespace pagedserve
