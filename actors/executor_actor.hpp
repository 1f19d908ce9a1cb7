#pragma once
// ExecutorActor: runs one forward pass per execute_step over the step's flat batch and samples the
// rows asked for. It runs on its own thread (its own io_context), computing inside a tbb::task_arena,
// so no kernel ever runs on a network thread. One per device.
//
// Mailbox: execute_step (scheduler) -> replies step_executed to the scheduler.
// State: the KV-cache memory (block ownership is the allocator's), scratch buffers, one sampler per
// started sequence (kept across preemption so a seeded stream continues where it was).
#include <spdlog/logger.h>
#include <tbb/task_arena.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <unordered_map>

#include "actors/messages.hpp"
#include "model/draft_proposer.hpp"
#include "model/forward.hpp"
#include "kv/kv_cache.hpp"

namespace pagedserve {

namespace grammar {
class token_vocabulary;
}

struct executor_options {
  int n_blocks = 0;
  int block_size = 16;
  int max_tokens_per_step = 512;
  int threads = 0;  // TBB arena size; 0 = all cores
  const kernels::kernel_table* kernels = nullptr;
  dtype kv_type = dtype::f32;  // the KV cache's elements: f32 or f16
  // The tokens' bytes for constrained decoding (shared by every request); null: structured output
  // requests are sampled unconstrained.
  std::shared_ptr<const grammar::token_vocabulary> vocabulary;
  // Speculative decoding's draft model (null: none): it proposes the tokens the plan's verification
  // chunks hold placeholders for, with its K/V in the same blocks (draft_proposer.hpp).
  std::shared_ptr<const model> draft;
};

// Holds the executor's own io_context; a base so it exists before the actor's strand is made on it.
struct executor_thread_context {
  boost::asio::io_context context{1};
};

class executor_actor : private executor_thread_context, public actor<executor_actor, executor_mailbox> {
 public:
  executor_actor(std::shared_ptr<const model> m, const executor_options& options);
  ~executor_actor() override;
  void connect(mailbox_ref<scheduler_mailbox>& scheduler) { scheduler_ = &scheduler; }

  void on(execute_step m);

 private:
  void start_sequence(const sequence_started& s);
 public:

  // Time spent computing steps, and time idle between two steps that followed each other (the
  // scheduler's and allocator's turnaround: what overlap hides). Readable from any thread.
  double busy_seconds() const { return busy_ns_.load(std::memory_order_relaxed) * 1e-9; }
  double gap_seconds() const { return gap_ns_.load(std::memory_order_relaxed) * 1e-9; }

 private:
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::shared_ptr<const model> model_;
  kv_cache cache_;
  forward_pass forward_;
  tbb::task_arena arena_;
  std::unique_ptr<draft_proposer> draft_;  // null without a draft model
  std::shared_ptr<const grammar::token_vocabulary> vocabulary_;
  std::unordered_map<request_id, sampler> samplers_;
  mailbox_ref<scheduler_mailbox>* scheduler_ = nullptr;
  std::shared_ptr<spdlog::logger> log_;
  std::atomic<std::uint64_t> busy_ns_{0}, gap_ns_{0};
  std::chrono::steady_clock::time_point last_step_end_{};
  std::thread thread_;
};

}  // namespace pagedserve
