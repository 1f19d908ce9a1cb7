#pragma once
// KvAllocatorActor: the only owner of KV block ownership (free list, refcounts, block tables, the
// prefix cache), and where an engine step's allocation runs: the scheduler lends it its queues once
// per step and it runs apply_step_result and schedule_step (pagedserve/schedule_step.hpp) over them
// and its block_manager, synchronously. It holds no state across steps besides the block manager.
//
// Mailbox: schedule_next_step (scheduler) -> replies step_scheduled to the scheduler, with the queues;
//          report_kv_status (network edge) -> calls its reply with the pool's figures.
// Invariants: each block_manager operation checks its own in O(1) (a block freed twice, taken while
// referenced); the whole pool (no leak, refcounts match tables) is checked after every step that
// freed a sequence in debug builds and in tests that ask, as that costs O(blocks). A reference lost
// on free is logged, not fatal.
#include <spdlog/logger.h>

#include "actors/messages.hpp"
#include "actors/status_board.hpp"
#include "kv/block_manager.hpp"

namespace pagedserve {

class kv_allocator_actor : public actor<kv_allocator_actor, kv_allocator_mailbox> {
 public:
  kv_allocator_actor(const boost::asio::any_io_executor& ex, int n_blocks, int block_size, bool prefix_caching);
  void connect(mailbox_ref<scheduler_mailbox>& scheduler) { scheduler_ = &scheduler; }
  // Publishes the pool's figures to board now and after every step (before the step's replies go out).
  // Call before the first message.
  void publish_to(status_board& board) {
    board_ = &board;
    board_->publish(pool_status());
  }

  void on(schedule_next_step m);
  void on(report_kv_status m);
  // Runs block_manager::find_invariant_violation after every step that freed blocks, aborting on a violation.
  void check_invariants_on_free(bool on) { check_on_free_ = on; }
  // The same after every step (tests).
  void check_invariants_every_step(bool on) { check_every_step_ = on; }

 private:
  void report(const blocks_freed& freed);
  kv_pool_status pool_status() const;
  void check_invariants() const;

  block_manager blocks_;
  mailbox_ref<scheduler_mailbox>* scheduler_ = nullptr;
  status_board* board_ = nullptr;
  std::shared_ptr<spdlog::logger> log_;
  bool check_every_step_ = false;
#ifdef NDEBUG
  bool check_on_free_ = false;
#else
  bool check_on_free_ = true;
#endif
};

}  // namespace pagedserve
