#pragma once
// The scheduling step without actors: the scheduler's queues and a block manager, stepped by hand,
// with the executor's part played by the test (it picks the sampled tokens).
#include <memory>
#include <vector>

#include "sched/schedule_step.hpp"

namespace pagedserve::test {

inline sequence make_sequence(std::uint64_t id, int n_prompt, int max_tokens, token_id fill = 5) {
  sequence s;
  s.id = request_id{id};
  s.tokens.assign(n_prompt, fill);
  s.n_prompt = n_prompt;
  auto p = std::make_shared<sampling_params>();
  p->max_tokens = max_tokens;
  s.params = p;
  s.stop_ids = {1, 2};
  return s;
}

struct scheduling {
  // Prefix caching off unless asked: the tests' prompts repeat one token, which would otherwise hit.
  explicit scheduling(scheduler_limits limits, int n_blocks = 1024, int block_size = 16, bool prefix_caching = false)
      : state(limits), blocks(n_blocks, block_size, prefix_caching) {}

  step_plan plan() { return schedule_step(state, blocks); }
  // The scheduled step ran and sampled `token` for every sampling chunk.
  step_result run(token_id token = 9) {
    std::size_t n = 0;
    for (const step_chunk& c : state.scheduled) n += c.samples;
    return apply_step_result(state, blocks, std::vector<token_id>(n, token), 0);
  }
  step_result run(const std::vector<token_id>& sampled) { return apply_step_result(state, blocks, sampled, 0); }

  scheduler_state state;
  block_manager blocks;
};

}  // namespace pagedserve::test
