#pragma once
// KvAllocatorActor: the only owner of KV block ownership (free list, refcounts, block tables).
//
// Mailbox: allocate_step (scheduler) -> replies step_allocated to the scheduler, granting chunks in
//          plan order until one cannot get its blocks (admissions reuse cached prefix blocks first);
//          commit_blocks (scheduler) -> computed full blocks enter the prefix cache;
//          free_sequences (scheduler) -> no reply;
//          a granted step_allocated lists the copy-on-write block copies the executor makes first;
//          report_kv_status (network edge) -> calls its reply with the pool's figures.
// Invariants: checked after every free (no leak, no double free, refcounts match tables).
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

 private:
  block_manager blocks_;
  std::vector<block_manager::block_copy> copies_;  // made for the step being allocated, not yet sent
  mailbox_ref<scheduler_mailbox>* scheduler_ = nullptr;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace pagedserve
