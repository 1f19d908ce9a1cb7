#include "pagedserve/scheduler_policy.hpp"

#include <algorithm>
#include <limits>

#include "pagedserve/check.hpp"

namespace pagedserve {

bool scheduler_policy::add(sequence s) {
  if (static_cast<int>(waiting_.size()) >= limits_.max_waiting) return false;
  // Nothing to prefill would plan a zero-token chunk, which ends admission for every other sequence.
  ps_check(!s.tokens.empty(), "scheduler: a sequence needs at least one token");
  waiting_.push_back(std::move(s));
  return true;
}

void scheduler_policy::request_finish(request_id id, finish_reason reason) { pending_finish_.emplace(id, reason); }

sequence* scheduler_policy::running_seq(request_id id) {
  auto it = std::find_if(running_.begin(), running_.end(), [&](const sequence& s) { return s.id == id; });
  return it == running_.end() ? nullptr : &*it;
}

int scheduler_policy::n_waiting_of(std::uint64_t client) const {
  return static_cast<int>(std::ranges::count(waiting_, client, &sequence::client));
}

const sequence* scheduler_policy::find(request_id id) const {
  for (const auto& s : running_)
    if (s.id == id) return &s;
  for (const auto& s : waiting_)
    if (s.id == id) return &s;
  return nullptr;
}

std::vector<step_chunk> scheduler_policy::plan_step(std::vector<sequence_update>& finished_now) {
  // Step boundary: no step is in flight, so finished sequences' blocks can be freed safely.
  for (const auto& [id, reason] : pending_finish_) {
    auto drop = [&](auto& queue) {
      auto it = std::find_if(queue.begin(), queue.end(), [&](const sequence& s) { return s.id == id; });
      if (it == queue.end()) return false;
      finished_now.push_back({id, {}, reason, {it->n_prompt, it->n_generated()}});
      queue.erase(it);
      return true;
    };
    if (!drop(running_)) drop(waiting_);
  }
  pending_finish_.clear();

  std::vector<step_chunk> plan;
  int budget = limits_.max_num_batched_tokens;
  double decode_work = 0;
  for (const sequence& s : running_) {
    if (static_cast<int>(s.tokens.size()) - s.n_computed != 1 || budget == 0) continue;
    plan.push_back({s.id, s.n_computed, 1, true, false, std::nullopt});
    decode_work += chunk_work(s.n_computed, 1);
    --budget;
  }
  // Prefill chunks (running, then new) share what the decodes leave of the slowdown bound.
  double work_left = prefill_work_allowance(decode_work, !plan.empty());
  int floor_left = limits_.min_prefill_chunk;  // the first chunks always get this many tokens
  auto prefill_tokens = [&](int first, int remaining) {
    int n = std::min(remaining, budget);
    constexpr double slack = 1e-9;  // rounding in the cost model's arithmetic
    if (chunk_work(first, n) > work_left + slack) {  // the longest chunk within the work left
      int lo = 0, hi = n;  // chunk_work grows with the chunk
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (chunk_work(first, mid) <= work_left + slack) lo = mid;
        else hi = mid - 1;
      }
      n = std::max(lo, std::min(n, floor_left));
    }
    budget -= n;
    work_left -= chunk_work(first, n);
    floor_left = std::max(0, floor_left - n);
    return n;
  };
  auto can_prefill = [&] { return budget > 0 && (work_left > 0 || floor_left > 0); };
  for (const sequence& s : running_) {
    const int remaining = static_cast<int>(s.tokens.size()) - s.n_computed;
    if (remaining <= 1 || !can_prefill()) continue;
    const int n = prefill_tokens(s.n_computed, remaining);
    if (n > 0) plan.push_back({s.id, s.n_computed, n, n == remaining, false, std::nullopt});
  }
  std::unordered_map<std::uint64_t, int> n_running_of;  // client -> its sequences running
  for (const sequence& s : running_) ++n_running_of[s.client];
  while (can_prefill() && static_cast<int>(running_.size()) < limits_.max_num_seqs) {
    const auto next = pick_admission(n_running_of);
    if (!next) break;
    const std::size_t w = next->index;
    const int first = next->fork_from ? waiting_[w].n_prompt - 1 : waiting_[w].n_computed;
    const int remaining = static_cast<int>(waiting_[w].tokens.size()) - first;
    const int n = prefill_tokens(first, remaining);
    if (n == 0) break;  // the step is full
    sequence s = std::move(waiting_[w]);
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(w));
    s.arrival = next_arrival_++;
    s.n_computed = first;
    s.fork_of.reset();  // admitted once; after a preemption it is recomputed like any sequence
    ++n_running_of[s.client];
    plan.push_back({s.id, first, n, n == remaining, true, next->fork_from});
    running_.push_back(std::move(s));
  }
  return plan;
}

std::optional<scheduler_policy::next_admission> scheduler_policy::pick_admission(
    const std::unordered_map<std::uint64_t, int>& n_running_of) const {
  std::optional<next_admission> pick;
  int fewest = std::numeric_limits<int>::max();
  for (std::size_t w = 0; w < waiting_.size() && fewest > 0; ++w) {
    const auto it = n_running_of.find(waiting_[w].client);
    const int n = it == n_running_of.end() ? 0 : it->second;
    if (n >= fewest) continue;  // an earlier one's client runs no more than this one's
    const auto admission = admission_of(waiting_[w]);
    if (!admission) continue;
    pick = next_admission{w, *admission};
    fewest = n;
  }
  return pick;
}

double scheduler_policy::chunk_work(int first, int n_tokens) const {
  const double positions = attended_positions(first, n_tokens);
  return n_tokens + cost_.attention_ratio() * positions;
}

double scheduler_policy::attended_positions(int first, int n_tokens) {
  // Each token attends over positions 0..p: first+1 .. first+n_tokens of them.
  return static_cast<double>(n_tokens) * first + 0.5 * n_tokens * (n_tokens + 1.0);
}

void scheduler_policy::on_step_timed(const std::vector<step_chunk>& plan, double seconds) {
  double tokens = 0, positions = 0;
  for (const step_chunk& c : plan) {
    tokens += c.n_tokens;
    positions += attended_positions(c.first, c.n_tokens);
  }
  cost_.observe(tokens, positions, seconds);
}

double scheduler_policy::step_work(const std::vector<step_chunk>& plan) const {
  double work = 0;
  for (const step_chunk& c : plan) work += chunk_work(c.first, c.n_tokens);
  return work;
}

double scheduler_policy::prefill_work_allowance(double decode_work, bool has_decodes) const {
  constexpr double unbounded = std::numeric_limits<double>::infinity();
  if (limits_.max_decode_slowdown <= 0 || !has_decodes) return unbounded;
  // Decodes running but no cost model yet: only the floor chunk, whose varied size also teaches it.
  if (!cost_.fitted()) return 0;
  // fixed + per_unit * (decodes + prefill) <= slowdown * (fixed + per_unit * decodes)
  return (limits_.max_decode_slowdown - 1) * cost_.predict(decode_work) / cost_.per_unit_seconds();
}

std::optional<std::optional<request_id>> scheduler_policy::admission_of(const sequence& s) const {
  if (!s.fork_of) return std::optional<request_id>{};
  auto found = std::ranges::find(running_, *s.fork_of, &sequence::id);
  const sequence* source = found == running_.end() ? nullptr : &*found;
  const bool prompt_ready = source && source->n_computed >= source->n_prompt;
  if (source && !prompt_ready) return std::nullopt;  // still prefilling: wait for it
  if (!source && std::ranges::any_of(waiting_, [&](const sequence& o) { return o.id == *s.fork_of; }))
    return std::nullopt;  // not started (or preempted): wait for it
  const request_id from = *s.fork_of;
  // Fork only a sequence that has computed this very prompt.
  const bool same_prompt = prompt_ready && source->n_prompt == s.n_prompt && s.n_computed == 0 &&
                           static_cast<int>(s.tokens.size()) == s.n_prompt &&
                           std::equal(s.tokens.begin(), s.tokens.end(), source->tokens.begin());
  if (same_prompt) return std::optional<request_id>{from};
  return std::optional<request_id>{};
}

void scheduler_policy::preempt(request_id id) {
  auto it = std::find_if(running_.begin(), running_.end(), [&](const sequence& s) { return s.id == id; });
  ps_check(it != running_.end(), "preempt: sequence is not running");
  it->n_computed = 0;  // recomputed from its tokens (prompt + generated) when readmitted
  waiting_.push_front(std::move(*it));
  running_.erase(it);
  ++n_preemptions_;
}

std::vector<request_id> scheduler_policy::on_allocation_refused(std::vector<step_chunk>& plan, std::size_t index) {
  ps_check(index < plan.size(), "allocation refused for a chunk outside the plan");
  std::vector<request_id> to_free;
  // Admissions are last in the plan: return them to the front of the queue, oldest first.
  auto send_back_admissions_from = [&](std::size_t from) {
    for (std::size_t i = plan.size(); i-- > from;) {
      if (!plan[i].admitted) continue;
      to_free.push_back(plan[i].id);
      auto it = std::find_if(running_.begin(), running_.end(), [&](const sequence& s) { return s.id == plan[i].id; });
      it->n_computed = 0;               // a fork admission had skipped to the prompt's last token
      it->fork_of = plan[i].fork_from;  // and tries to fork again
      waiting_.push_front(std::move(*it));
      running_.erase(it);
      plan.erase(plan.begin() + static_cast<std::ptrdiff_t>(i));
    }
  };
  if (plan[index].admitted) {
    send_back_admissions_from(index);
    return to_free;
  }
  // A running sequence needs a block: admissions wait, and the newest running sequence gives way.
  send_back_admissions_from(0);
  auto newest = std::max_element(running_.begin(), running_.end(),
                                 [](const sequence& a, const sequence& b) { return a.arrival < b.arrival; });
  const request_id victim = newest->id;
  preempt(victim);
  std::erase_if(plan, [&](const step_chunk& c) { return c.id == victim; });
  to_free.push_back(victim);
  return to_free;
}

void scheduler_policy::on_admission_cached(std::vector<step_chunk>& plan, std::size_t index, int n_cached) {
  step_chunk& c = plan[index];
  sequence* s = running_seq(c.id);
  ps_check(c.admitted && s != nullptr && c.first == s->n_computed, "prefix hit for a chunk that is not an admission");
  const int len = static_cast<int>(s->tokens.size());
  ps_check(n_cached >= c.first && n_cached < len, "prefix hit must leave the last token to compute");
  if (n_cached == c.first) return;
  const int reserved = c.n_tokens;
  s->n_computed = n_cached;
  c.first = n_cached;
  c.n_tokens = std::min(reserved, len - n_cached);
  c.samples = c.first + c.n_tokens == len;
}

std::vector<sequence_update> scheduler_policy::on_step_executed(const std::vector<step_chunk>& plan,
                                                                const std::vector<token_id>& sampled) {
  std::vector<sequence_update> updates;
  std::size_t next_sample = 0;
  for (const step_chunk& c : plan) {
    sequence* s = running_seq(c.id);
    ps_check(s != nullptr, "executed chunk of a sequence that is not running");
    s->n_computed = c.first + c.n_tokens;
    if (!c.samples) continue;
    ps_check(next_sample < sampled.size(), "step result has fewer samples than the plan");
    const token_id t = sampled[next_sample++];
    s->tokens.push_back(t);
    sequence_update u{c.id, {t}, std::nullopt, {}};
    const bool is_stop = !s->params->ignore_eos && std::ranges::find(s->stop_ids, t) != s->stop_ids.end();
    if (is_stop)
      u.finished = finish_reason::stop;
    else if (s->n_generated() >= s->params->max_tokens || static_cast<int>(s->tokens.size()) > limits_.context_len)
      u.finished = finish_reason::length;
    u.used = {s->n_prompt, s->n_generated()};
    updates.push_back(std::move(u));
  }
  ps_check(next_sample == sampled.size(), "step result has more samples than the plan");
  std::erase_if(running_, [&](const sequence& s) {
    return std::ranges::any_of(updates, [&](const sequence_update& u) { return u.id == s.id && u.finished; });
  });
  return updates;
}

}  // namespace pagedserve
