#pragma once
// The engine's figures for the network edge (/health, /metrics), published by the scheduler and the
// KV allocator as they change, so that reading them never waits for the engine thread: that thread
// also runs the steps, and one step can take seconds (a long prefill chunk on a large model), longer
// than a load balancer's health check waits.
#include <mutex>
#include <utility>

#include "pagedserve/engine_status.hpp"

namespace pagedserve {

class status_board {
 public:
  void publish(const scheduler_status& s) {
    std::lock_guard lock(mutex_);
    scheduler_ = s;
  }
  void publish(const kv_pool_status& s) {
    std::lock_guard lock(mutex_);
    kv_ = s;
  }
  std::pair<scheduler_status, kv_pool_status> read() const {
    std::lock_guard lock(mutex_);
    return {scheduler_, kv_};
  }

 private:
  mutable std::mutex mutex_;
  scheduler_status scheduler_;
  kv_pool_status kv_;
};

}  // namespace pagedserve
