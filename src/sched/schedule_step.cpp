#include "sched/schedule_step.hpp"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "pagedserve/check.hpp"
#include "sched/step_budget.hpp"
#include "spec/ngram_proposer.hpp"

namespace pagedserve {
namespace {

void free_blocks(block_manager& blocks, request_id id, blocks_freed& freed) {
  if (auto fault = blocks.free_sequence(id)) [[unlikely]]
    freed.faults.push_back(std::move(*fault));
  freed.ids.push_back(id);
}

usage usage_of(const sequence& s) {
  return {s.n_prompt, s.n_generated(), s.n_spec_draft_tokens, s.n_spec_accepted_tokens};
}

sequence& running_sequence(scheduler_state& state, request_id id) {
  auto it = std::ranges::find(state.running, id, &sequence::id);
  ps_check(it != state.running.end(), "scheduler: a scheduled sequence is not running");
  return *it;
}

// Step boundary: the sequences asked to finish end now, running or waiting.
void end_pending_finishes(scheduler_state& state, block_manager& blocks, step_plan& plan) {
  for (const auto& [id, reason] : state.pending_finish) {
    auto end = [&](auto& queue) {
      auto it = std::ranges::find(queue, id, &sequence::id);
      if (it == queue.end()) return false;
      plan.finished.push_back({id, {}, reason, usage_of(*it)});
      queue.erase(it);
      return true;
    };
    if (end(state.running)) free_blocks(blocks, id, plan.freed);
    else end(state.waiting);  // a waiting sequence holds no blocks
  }
  state.pending_finish.clear();
}

// The newest running sequence gives way: its chunk leaves the plan, copies into its blocks are void
// (the blocks may go to another sequence), its blocks are freed, and it waits at the front of the
// queue to be recomputed from its tokens (prompt and generated).
void preempt_newest(scheduler_state& state, block_manager& blocks, step_plan& plan) {
  sequence victim = std::move(state.running.back());
  state.running.pop_back();
  std::erase_if(plan.chunks, [&](const step_chunk& c) { return c.id == victim.id; });
  for (block_id b : blocks.table(victim.id))
    std::erase_if(plan.block_copies, [&](const block_manager::block_copy& c) { return c.to == b; });
  free_blocks(blocks, victim.id, plan.freed);
  plan.preempted.push_back(victim.id);
  victim.n_computed = 0;
  state.waiting.push_front(std::move(victim));
  ++state.n_preemptions;
}

// Gives running[i] the blocks to hold `end` tokens (copying shared blocks it writes), preempting the
// newest running sequences until it has them. False when it was the newest itself and gave way.
bool allocate_running(scheduler_state& state, block_manager& blocks, step_plan& plan, std::size_t i, int end) {
  const request_id id = state.running[i].id;
  const int first_write = state.running[i].n_computed;
  while (!blocks.ensure_capacity(id, end, first_write, plan.block_copies)) {
    const bool newest = i + 1 == state.running.size();
    preempt_newest(state, blocks, plan);
    if (newest) return false;
  }
  return true;
}

// How waiting sequence s may be admitted now: nullopt = hold it back; else the fork source, if any.
// A sample (fork_of) waits while the sample it forks is waiting or still computing the prompt, and
// forks it once it has; a sample whose source is gone, or has another prompt, computes its own.
std::optional<std::optional<request_id>> admission_of(const scheduler_state& state, const sequence& s) {
  if (s.awaiting_samples) return std::nullopt;
  if (!s.fork_of) return std::optional<request_id>{};
  auto found = std::ranges::find(state.running, *s.fork_of, &sequence::id);
  const sequence* source = found == state.running.end() ? nullptr : &*found;
  const bool prompt_ready = source && source->n_computed >= source->n_prompt;
  if (source && !prompt_ready) return std::nullopt;
  if (!source && std::ranges::any_of(state.waiting, [&](const sequence& o) { return o.id == *s.fork_of; }))
    return std::nullopt;
  const bool same_prompt = prompt_ready && source->n_prompt == s.n_prompt && s.n_computed == 0 &&
                           static_cast<int>(s.tokens.size()) == s.n_prompt &&
                           std::equal(s.tokens.begin(), s.tokens.end(), source->tokens.begin());
  if (same_prompt) return std::optional<request_id>{*s.fork_of};
  return std::optional<request_id>{};
}

// Tokens n-gram lookup proposes after s's last token, at most n_max, and never past what s may still
// generate (max_tokens) or hold (the context). None for a structured-output request: its constraint
// masks each step's logits, which proposals verified in one step would bypass. None while the
// sequence backs off after its proposals were mostly rejected (speculation_backoff.hpp).
std::vector<token_id> proposals_for(const scheduler_limits& limits, const sequence& s, int n_max) {
  if (n_max <= 0 || s.params->format.type != output_format::kind::none) return {};
  if (!speculation_may_propose(s.spec_record, s.n_generated())) return {};
  if (limits.speculation.draft_model && s.draft_lapsed) return {};
  const int n_tokens = static_cast<int>(s.tokens.size());
  n_max = std::min({n_max, s.params->max_tokens - s.n_generated() - 1, limits.context_len - n_tokens});
  if (limits.speculation.draft_model) return std::vector<token_id>(std::max(0, n_max), token_id{0});  // placeholders
  return ngram_propose(s.tokens, {limits.speculation.lookup_max, limits.speculation.lookup_min}, n_max);
}

// A draft model mirrors a sequence's rows (to keep its draft K/V valid) only while the sequence may
// still propose: past the knee (the batch leaves no proposals for any sequence) or at its longest back-off
// it lapses, and the draft costs nothing for it from then on. Lapsing is for good (until a preemption
// readmits it): its draft K/V have gaps, and the target decides every token anyway.
void lapse_draft_if_idle(const speculation_limits& limits, sequence& s, bool past_knee) {
  if (limits.draft_model && (past_knee || speculation_backoff_at_longest(s.spec_record))) s.draft_lapsed = true;
}

// Proposals that fit the blocks: those needing a new block only while the pool has blocks to spare
// (a proposal never preempts a sequence).
int proposals_fitting(const block_manager& blocks, const sequence& s, int n) {
  const int first = s.n_computed;
  const int extra = blocks.blocks_needed(first + 1 + n) - std::max(blocks.blocks_needed(first + 1),
                                                                   static_cast<int>(blocks.table(s.id).size()));
  if (extra <= 0 || extra < blocks.n_blocks_free()) return n;
  return std::max(0, std::min(n, blocks.blocks_needed(first + 1) * blocks.block_size() - first - 1));
}

struct next_admission {
  std::size_t index;  // into waiting
  std::optional<request_id> fork_from;
};
// The first waiting sequence, in queue order, of those whose client has the fewest sequences
// running, that may be admitted now.
std::optional<next_admission> pick_admission(const scheduler_state& state,
                                             const std::unordered_map<std::uint64_t, int>& n_running_of) {
  std::optional<next_admission> pick;
  int fewest = std::numeric_limits<int>::max();
  for (std::size_t w = 0; w < state.waiting.size() && fewest > 0; ++w) {
    const auto it = n_running_of.find(state.waiting[w].client);
    const int n = it == n_running_of.end() ? 0 : it->second;
    if (n >= fewest) continue;  // an earlier one's client runs no more than this one's
    const auto admission = admission_of(state, state.waiting[w]);
    if (!admission) continue;
    pick = next_admission{w, *admission};
    fewest = n;
  }
  return pick;
}

}  // namespace

step_plan schedule_step(scheduler_state& state, block_manager& blocks) {
  ps_check(state.scheduled.empty(), "schedule_step: the previous step's result was not applied");
  step_plan plan;
  end_pending_finishes(state, blocks, plan);
  step_budget budget(state.limits, state.cost);

  // 1. Decodes: every running sequence one token from sampling, oldest first; with speculative
  // decoding, followed by the tokens n-gram lookup proposes, as many as the batch's size still makes
  // worth verifying (speculation_policy.hpp).
  const auto decoding = [](const sequence& s) { return static_cast<int>(s.tokens.size()) - s.n_computed == 1; };
  const speculation_limits& spec = state.limits.speculation;
  const int n_decodes = static_cast<int>(std::ranges::count_if(state.running, decoding));
  const int n_proposals = speculation_per_sequence(spec, state.cost, n_decodes);
  // The batch is past the knee when its decodes leave no proposals for anyone though one sequence
  // alone would get some: not when the learnt knee dips below 2 rows for a while (the draft's passes
  // count in the steps it learns from), which would lapse a lone sequence for good.
  const bool past_knee = n_decodes > 1 && n_proposals == 0 && speculation_per_sequence(spec, state.cost, 1) > 0;
  for (std::size_t i = 0; i < state.running.size(); ++i) {
    const int first = state.running[i].n_computed;
    if (!decoding(state.running[i])) continue;
    if (!budget.take_decode(first)) break;
    lapse_draft_if_idle(spec, state.running[i], past_knee);
    std::vector<token_id> proposed = proposals_for(state.limits, state.running[i], n_proposals);
    proposed.resize(proposals_fitting(blocks, state.running[i], static_cast<int>(proposed.size())));
    proposed.resize(budget.take_proposals(first, static_cast<int>(proposed.size())));
    const int n = 1 + static_cast<int>(proposed.size());
    if (!allocate_running(state, blocks, plan, i, first + n)) break;
    plan.chunks.push_back({state.running[i].id, first, n, true, false, std::nullopt, std::move(proposed),
                           spec.draft_model && !state.running[i].draft_lapsed});
  }

  // 2. Prefill chunks of running sequences, within what the decodes leave of the step.
  budget.start_prefill();
  for (std::size_t i = 0; i < state.running.size() && budget.can_prefill(); ++i) {
    const int first = state.running[i].n_computed;
    const int remaining = static_cast<int>(state.running[i].tokens.size()) - first;
    if (remaining <= 1) continue;
    const int n = budget.take_prefill(first, remaining);
    if (n == 0) continue;
    if (!allocate_running(state, blocks, plan, i, first + n)) break;
    lapse_draft_if_idle(spec, state.running[i], past_knee);
    plan.chunks.push_back({state.running[i].id, first, n, n == remaining, false, std::nullopt, {},
                           spec.draft_model && !state.running[i].draft_lapsed});
  }

  // 3. Admissions, taking turns across clients, while the step and the sequence cap have room. The
  // chunk starts after the blocks found in the prefix cache, or, for a sample of a prompt another
  // sample computed, after that sample's prompt blocks (shared; the last token is recomputed for its
  // own logits). An admission that gets no blocks waits where it is, and so do those behind it.
  // None in a step that preempted: the pool is short, and a preempted sequence readmitted at once
  // (its freed blocks are free again) would only thrash.
  std::unordered_map<std::uint64_t, int> n_running_of;
  for (const sequence& s : state.running) ++n_running_of[s.client];
  while (plan.preempted.empty() && budget.can_prefill() && state.n_running() < state.limits.max_num_seqs) {
    const auto next = pick_admission(state, n_running_of);
    if (!next) break;
    sequence& s = state.waiting[next->index];
    const int first = next->fork_from ? s.n_prompt - 1 : blocks.match_prefix(s.id, s.tokens, s.cache_salt);
    const int remaining = static_cast<int>(s.tokens.size()) - first;
    const int n = budget.take_prefill(first, remaining);
    if (n > 0 && next->fork_from) blocks.fork(*next->fork_from, s.id, s.n_prompt, first);
    if (n == 0 || !blocks.ensure_capacity(s.id, first + n, first, plan.block_copies)) {
      if (auto fault = blocks.free_sequence(s.id)) [[unlikely]]
        plan.freed.faults.push_back(std::move(*fault));
      break;
    }
    // The draft may read the prefix it starts after only if its K/V are there: the fork source's
    // draft K/V are valid while it mirrors, a cached block's where it carries the mark.
    const bool draft_kv_valid = next->fork_from ? !running_sequence(state, *next->fork_from).draft_lapsed
                                                : blocks.draft_kv_present(s.id, first / blocks.block_size());
    s.draft_lapsed = !draft_kv_valid;
    lapse_draft_if_idle(spec, s, past_knee);
    sequence admitted = std::move(s);
    state.waiting.erase(state.waiting.begin() + static_cast<std::ptrdiff_t>(next->index));
    admitted.arrival = state.next_arrival++;
    admitted.n_computed = first;
    admitted.fork_of.reset();  // admitted once; after a preemption it is recomputed like any sequence
    ++n_running_of[admitted.client];
    plan.chunks.push_back({admitted.id, first, n, n == remaining, true, next->fork_from, {},
                           spec.draft_model && !admitted.draft_lapsed});
    state.running.push_back(std::move(admitted));
  }

  // 4. The batch, from the final block tables (copy-on-write replaced shared blocks in them).
  for (const step_chunk& c : plan.chunks) {
    const std::vector<token_id>& tokens = running_sequence(state, c.id).tokens;
    if (c.proposed.empty()) {
      plan.batch.add_chunk(tokens, c.first, c.n_tokens, blocks.table(c.id), blocks.block_size(), c.samples);
      continue;
    }
    std::vector<token_id> verified{tokens[c.first]};
    verified.insert(verified.end(), c.proposed.begin(), c.proposed.end());
    plan.batch.add_verify_chunk(verified, c.first, blocks.table(c.id), blocks.block_size());
  }
  state.scheduled = plan.chunks;
  return plan;
}

void adopt_drafted_proposals(std::vector<step_chunk>& scheduled, const std::vector<std::vector<token_id>>& drafted) {
  std::size_t next = 0;
  for (step_chunk& c : scheduled) {
    if (!c.samples) continue;
    ps_check(next < drafted.size() && drafted[next].size() == c.proposed.size(),
             "drafted proposals do not match the plan's placeholders");
    c.proposed = drafted[next++];
  }
  ps_check(next == drafted.size(), "drafted proposals for no sampling chunk");
}

step_result apply_step_result(scheduler_state& state, block_manager& blocks, const std::vector<token_id>& sampled,
                              double seconds) {
  observe_step_time(state.cost, state.scheduled, seconds);
  const auto n_decodes = std::ranges::count_if(state.scheduled, [](const step_chunk& c) {
    return c.samples && !c.admitted && c.n_tokens == 1 + static_cast<int>(c.proposed.size());
  });
  const double break_even = speculation_break_even(state.limits.speculation, state.cost, static_cast<int>(n_decodes));
  step_result result;
  const int block_size = blocks.block_size();
  std::size_t next_sample = 0;
  for (const step_chunk& c : state.scheduled) {
    sequence& s = running_sequence(state, c.id);
    // A sampling chunk's tokens: the proposals the target agreed with, then one it sampled itself
    // (a replacement for the first rejected proposal, or the token after the last accepted one).
    int n_accepted = 0, n_sampled = 0;
    if (c.samples) {
      const int n_proposed = static_cast<int>(c.proposed.size());
      while (n_accepted < n_proposed && next_sample + n_accepted < sampled.size() &&
             sampled[next_sample + n_accepted] == c.proposed[n_accepted])
        ++n_accepted;
      n_sampled = n_accepted + 1;
      ps_check(next_sample + n_sampled <= sampled.size(), "step result has fewer samples than the plan");
      s.tokens.insert(s.tokens.end(), sampled.begin() + static_cast<std::ptrdiff_t>(next_sample),
                      sampled.begin() + static_cast<std::ptrdiff_t>(next_sample + n_sampled));
    }
    // K/V are valid up to the last accepted proposal; the rows of rejected ones are rolled back.
    s.n_computed = c.proposed.empty() ? c.first + c.n_tokens : c.first + 1 + n_accepted;
    // Blocks the step filled become reusable prefix-cache entries (never one holding a rejected proposal).
    const int first_block = c.first / block_size, end_block = s.n_computed / block_size;
    if (end_block > first_block)
      blocks.commit_full_blocks(s.id, first_block,
                                std::span(s.tokens).subspan(first_block * block_size, (end_block - first_block) * block_size),
                                c.drafts);  // mirrored now, so before too: a lapse lasts until readmission
    if (!c.proposed.empty()) blocks.truncate(s.id, static_cast<int>(s.tokens.size()));
    if (!c.samples) continue;
    s.n_spec_draft_tokens += static_cast<int>(c.proposed.size());
    s.n_spec_accepted_tokens += n_accepted;
    speculation_observe(s.spec_record, static_cast<int>(c.proposed.size()), n_accepted, break_even, s.n_generated());
    // Stop rules token by token: a stop token or max_tokens may end the run early.
    const int n_before = static_cast<int>(s.tokens.size()) - n_sampled;
    sequence_update u{c.id, {}, std::nullopt, {}, n_sampled, static_cast<int>(c.proposed.size()), n_accepted};
    for (int k = 0; k < n_sampled && !u.finished; ++k) {
      const token_id t = s.tokens[n_before + k];
      u.new_tokens.push_back(t);
      const int n_generated = n_before + k + 1 - s.n_prompt;
      if (!s.params->ignore_eos && std::ranges::find(s.stop_ids, t) != s.stop_ids.end())
        u.finished = finish_reason::stop;
      else if (n_generated >= s.params->max_tokens || n_before + k + 1 > state.limits.context_len)
        u.finished = finish_reason::length;
    }
    s.tokens.resize(n_before + u.new_tokens.size());
    next_sample += n_sampled;
    u.used = usage_of(s);
    result.updates.push_back(std::move(u));
  }
  ps_check(next_sample == sampled.size(), "step result has more samples than the plan");
  state.scheduled.clear();
  for (const sequence_update& u : result.updates) {
    if (!u.finished) continue;
    free_blocks(blocks, u.id, result.freed);
    std::erase_if(state.running, [&](const sequence& s) { return s.id == u.id; });
  }
  return result;
}

}  // namespace pagedserve
