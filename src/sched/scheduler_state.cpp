#include "sched/scheduler_state.hpp"

#include <algorithm>

#include "pagedserve/check.hpp"

namespace pagedserve {

bool scheduler_state::add(sequence s) {
  if (static_cast<int>(waiting.size()) >= limits.max_waiting) return false;
  // Nothing to prefill would plan a zero-token chunk, which ends admission for every other sequence.
  ps_check(!s.tokens.empty(), "scheduler: a sequence needs at least one token");
  waiting.push_back(std::move(s));
  return true;
}

const sequence* scheduler_state::find(request_id id) const {
  if (auto it = std::ranges::find(running, id, &sequence::id); it != running.end()) return &*it;
  if (auto it = std::ranges::find(waiting, id, &sequence::id); it != waiting.end()) return &*it;
  return nullptr;
}

int scheduler_state::n_waiting_of(std::uint64_t client) const {
  return static_cast<int>(std::ranges::count(waiting, client, &sequence::client));
}

}  // namespace pagedserve
