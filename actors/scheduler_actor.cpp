#include "actors/scheduler_actor.hpp"

#include "actors/logger.hpp"
#include "pagedserve/check.hpp"

namespace pagedserve {

scheduler_actor::scheduler_actor(const boost::asio::any_io_executor& ex, scheduler_limits limits, int block_size)
    : actor(ex), policy_(limits), block_size_(block_size), log_(actor_logger("sched")) {}

void scheduler_actor::on(submit_request m) {
  log_->debug("[{}] submitted, {} prompt tokens", m.id.value, m.prompt.size());
  if (closed_) {
    m.reply_to->tell(request_rejected{m.id, closed_->code, closed_->message});
    return;
  }
  sequence s;
  s.id = m.id;
  s.n_prompt = static_cast<int>(m.prompt.size());
  s.tokens = std::move(m.prompt);
  s.params = std::move(m.params);
  s.stop_ids = std::move(m.stop_ids);
  s.cache_salt = m.cache_salt;
  s.client = m.client;
  if (m.group && m.group->size > 1) {
    auto [g, first] = groups_.try_emplace(m.group->key, open_group{m.id, m.group->size});
    if (!first) s.fork_of = g->second.first;
    if (--g->second.to_come == 0) groups_.erase(g);
  }
  if (policy_.n_waiting_of(s.client) >= policy_.limits().max_waiting_per_client) {
    m.reply_to->tell(request_rejected{m.id, engine_error::too_many_requests,
                                      "this client already has " + std::to_string(policy_.limits().max_waiting_per_client) +
                                          " requests waiting; retry when some have started"});
    return;
  }
  if (!policy_.add(std::move(s))) {
    m.reply_to->tell(request_rejected{m.id, engine_error::queue_full, "the server's waiting queue is full; retry later"});
    return;
  }
  reply_to_[m.id] = std::move(m.reply_to);
  never_scheduled_[m.id] = m.arrived;
  start_step_if_idle();
}

void scheduler_actor::on(finish_request m) {
  if (!reply_to_.contains(m.id)) return;  // already finished: the request actor has its final message
  if (m.error) ending_with_error_.try_emplace(m.id, std::move(*m.error));
  policy_.request_finish(m.id, m.reason);
  start_step_if_idle();
}

void scheduler_actor::on(finish_all m) {
  log_->info("ending all {} requests: {}", reply_to_.size(), engine_error_code(m.error.code));
  for (const auto& [id, reply_to] : reply_to_) {
    ending_with_error_.try_emplace(id, m.error);
    policy_.request_finish(id, finish_reason::cancelled);
  }
  closed_ = std::move(m.error);
  start_step_if_idle();
}

void scheduler_actor::start_step_if_idle(bool follows_step) {
  if (step_in_flight_) return;
  std::vector<sequence_update> finished;
  plan_ = policy_.plan_step(finished);
  deliver(finished, {});
  if (plan_.empty()) return;
  step_in_flight_ = true;
  step_follows_ = follows_step;
  ++step_.value;
  request_allocation();
}

void scheduler_actor::request_allocation() {
  allocate_step m{step_, {}};
  m.needs.reserve(plan_.size());
  for (const step_chunk& c : plan_) {
    if (c.admitted) {  // the allocator looks its tokens up in the prefix cache first (or forks)
      const sequence* s = policy_.find(c.id);
      m.needs.push_back({c.id, c.n_tokens, 0, std::make_shared<const std::vector<token_id>>(s->tokens), s->cache_salt,
                         c.fork_from, s->n_prompt});
    } else {
      m.needs.push_back({c.id, c.first + c.n_tokens, c.first, nullptr, 0, std::nullopt, 0});
    }
  }
  kv_->tell(std::move(m));
}

void scheduler_actor::on(step_allocated m) {
  if (m.step != step_) return;  // stale
  if (m.refused) {
    std::vector<request_id> to_free = policy_.on_allocation_refused(plan_, *m.refused);
    log_->debug("step {}: KV pool full, freeing {} sequences", step_.value, to_free.size());
    if (!to_free.empty()) kv_->tell(free_sequences{std::move(to_free)});
    if (plan_.empty()) {
      step_in_flight_ = false;
      start_step_if_idle();
    } else {
      request_allocation();
    }
    return;
  }
  ps_check(m.tables.size() == plan_.size() && m.n_cached.size() == plan_.size(),
           "allocator granted a different number of chunks than planned");
  const auto now = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < plan_.size(); ++i) {
    if (!plan_[i].admitted) continue;
    policy_.on_admission_cached(plan_, i, m.n_cached[i]);
    if (auto q = never_scheduled_.find(plan_[i].id); q != never_scheduled_.end()) {
      if (metrics_) metrics_->on_scheduled(now - q->second);
      never_scheduled_.erase(q);
    }
  }
  execute_step e{step_, build_batch(m.tables), {}, {}, std::move(dropped_), std::move(m.block_copies), step_follows_};
  dropped_.clear();
  for (const step_chunk& c : plan_) {
    if (c.samples) e.sample_for.push_back(c.id);
    if (known_to_executor_.insert(c.id).second) {
      const sequence* s = policy_.find(c.id);
      const std::uint64_t seed = s->params->seed ? *s->params->seed : seed_source_();
      e.started.push_back({c.id, s->params, seed, {s->tokens.begin(), s->tokens.begin() + s->n_prompt}});
    }
  }
  executor_->tell(std::move(e));
}

std::shared_ptr<step_batch> scheduler_actor::build_batch(const std::vector<std::vector<std::int32_t>>& tables) const {
  auto b = std::make_shared<step_batch>();
  for (std::size_t i = 0; i < plan_.size(); ++i) {
    const step_chunk& c = plan_[i];
    const sequence* s = policy_.find(c.id);
    const std::vector<std::int32_t>& table = tables[i];
    b->seq_block_offset.push_back(static_cast<std::int32_t>(b->block_tables.size()));
    b->block_tables.insert(b->block_tables.end(), table.begin(), table.end());
    for (int p = c.first; p < c.first + c.n_tokens; ++p) {
      b->tokens.push_back(s->tokens[p]);
      b->positions.push_back(p);
      b->seq_of_token.push_back(static_cast<std::int32_t>(i));
      b->slots.push_back(table[p / block_size_] * block_size_ + p % block_size_);
    }
    if (c.samples) b->logits_rows.push_back(static_cast<std::int32_t>(b->tokens.size() - 1));
  }
  return b;
}

void scheduler_actor::on(step_executed m) {
  if (m.step != step_) return;  // stale
  commit_computed_blocks();
  if (log_->should_log(spdlog::level::trace)) {  // how well the cost model predicts steps
    int decodes = 0, prefill = 0;
    for (const step_chunk& c : plan_) (c.n_tokens == 1 && c.samples ? decodes : prefill) += c.n_tokens;
    const double work = policy_.step_work(plan_);
    log_->trace("step {}: {} decodes, {} prefill tokens, work {:.1f}, predicted {:.2f} ms, took {:.2f} ms", step_.value,
                      decodes, prefill, work, 1e3 * policy_.cost_model().predict(work), 1e3 * m.compute_seconds);
  }
  policy_.on_step_timed(plan_, m.compute_seconds);
  auto updates = policy_.on_step_executed(plan_, m.sampled);
  // Updates come one per sampled row, in the same order as the executor's logprobs.
  std::vector<std::vector<token_logprobs>> logprobs(updates.size());
  for (std::size_t i = 0; i < updates.size() && i < m.logprobs.size(); ++i)
    if (m.logprobs[i]) logprobs[i].push_back(std::move(*m.logprobs[i]));
  deliver(updates, std::move(logprobs));
  step_in_flight_ = false;
  start_step_if_idle(true);
}

void scheduler_actor::commit_computed_blocks() {
  // Blocks the step filled become reusable prefix-cache entries; sent before any free of their sequence.
  commit_blocks m;
  for (const step_chunk& c : plan_) {
    const int first_block = c.first / block_size_, end_block = (c.first + c.n_tokens) / block_size_;
    if (end_block <= first_block) continue;
    const sequence* s = policy_.find(c.id);
    m.sequences.push_back({c.id, first_block,
                           {s->tokens.begin() + first_block * block_size_, s->tokens.begin() + end_block * block_size_}});
  }
  if (!m.sequences.empty()) kv_->tell(std::move(m));
}

void scheduler_actor::deliver(std::vector<sequence_update>& updates,
                              std::vector<std::vector<token_logprobs>> logprobs) {
  // Blocks are freed before the client can hear its request ended, so /health after `done` is exact.
  std::vector<request_id> to_free;
  for (const sequence_update& u : updates)
    if (u.finished) to_free.push_back(u.id);
  if (!to_free.empty()) kv_->tell(free_sequences{to_free});
  for (std::size_t i = 0; i < updates.size(); ++i) {
    sequence_update& u = updates[i];
    auto it = reply_to_.find(u.id);
    ps_check(it != reply_to_.end(), "update for a request with no reply address");
    if (!u.new_tokens.empty())
      it->second->tell(tokens_generated{u.id, std::move(u.new_tokens),
                                        i < logprobs.size() ? std::move(logprobs[i]) : std::vector<token_logprobs>{}});
    if (!u.finished) continue;
    if (auto e = ending_with_error_.find(u.id); e != ending_with_error_.end()) {
      // A request that ended on its own in the same step keeps its real reason.
      if (*u.finished == finish_reason::cancelled) it->second->tell(request_failed{u.id, std::move(e->second), u.used});
      else it->second->tell(request_finished{u.id, *u.finished, u.used});
      ending_with_error_.erase(e);
    } else {
      it->second->tell(request_finished{u.id, *u.finished, u.used});
    }
    reply_to_.erase(it);
    never_scheduled_.erase(u.id);
    if (known_to_executor_.erase(u.id)) dropped_.push_back(u.id);
    log_->debug("[{}] finished: {}", u.id.value, finish_reason_name(*u.finished));
  }
}

void scheduler_actor::on(report_scheduler_status m) {
  m.reply({policy_.n_running(), policy_.n_waiting(), policy_.n_preemptions(), step_.value});
}

}  // namespace pagedserve
