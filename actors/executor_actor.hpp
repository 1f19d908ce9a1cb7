#pragma once
// ExecutorActor: runs one forward pass per execute_step over the step's flat batch and samples the
// rows asked for, computing inside a tbb::task_arena. Its strand is on the engine thread, beside the
// scheduler and the KV allocator: no kernel ever runs on a network thread, and a step's end turns
// into the next step's start on the same thread, with no thread to wake in between (the two
// hand-offs a token cost before were ~60 us: docs/per-token-path.md). One per device.
//
// Mailbox: execute_step (scheduler) -> replies step_executed to the scheduler.
// State: the KV-cache memory (block ownership is the allocator's), scratch buffers, one sampler per
// started sequence (kept across preemption so a seeded stream continues where it was).
#include <spdlog/logger.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
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

class executor_actor : public actor<executor_actor, executor_mailbox> {
 public:
  // `ex`: the engine thread's executor, the one the scheduler's and the allocator's strands are on.
  executor_actor(const boost::asio::any_io_executor& ex, std::shared_ptr<const model> m, const executor_options& options);
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
  std::chrono::steady_clock::duration last_step_busy_{};  // the last step's compute time
};

}  // namespace pagedserve
