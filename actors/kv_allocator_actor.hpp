#pragma once
// KvAllocatorActor: the only owner of KV block ownership (free list, refcounts, block tables).
//
// Mailbox: allocate_step (scheduler) -> replies step_allocated to the scheduler, granting chunks in
//          plan order until one cannot get its blocks (admissions reuse cached prefix blocks first);
//          commit_blocks (scheduler) -> computed full blocks enter the prefix cache;
//          free_sequences (scheduler) -> no reply;
//          a granted step_allocated lists the copy-on-write block copies the executor makes first;
//          report_kv_status (network edge) -> calls its reply with the pool's figures.
// Invariants: each operation checks its own in O(1) (a block freed twice, taken while referenced);
// the whole pool (no leak, refcounts match tables) is checked after every free in debug builds and
// in tests that ask, as that costs O(blocks). A reference lost on free is logged, not fatal.
#include <spdlog/logger.h>

#include "actors/messages.hpp"
#include "pagedserve/block_manager.hpp"

namespace pagedserve {

class kv_allocator_actor : public actor<kv_allocator_actor, kv_allocator_mailbox> {
 public:
  kv_allocator_actor(const boost::asio::any_io_executor& ex, int n_blocks, int block_size, bool prefix_caching);
  void connect(mailbox_ref<scheduler_mailbox>& scheduler) { scheduler_ = &scheduler; }

  void on(allocate_step m);
  void on(free_sequences m);
  void on(commit_blocks m);
  void on(report_kv_status m);
  // Runs block_manager::find_invariant_violation after every free, aborting on a violation.
  void check_invariants_on_free(bool on) { check_on_free_ = on; }

 private:
  block_manager blocks_;
  std::vector<block_manager::block_copy> copies_;  // made for the step being allocated, not yet sent
  mailbox_ref<scheduler_mailbox>* scheduler_ = nullptr;
  std::shared_ptr<spdlog::logger> log_;
#ifdef NDEBUG
  bool check_on_free_ = false;
#else
  bool check_on_free_ = true;
#endif
};

}  // namespace pagedserve
