#include "actors/scheduler_actor.hpp"

#include "actors/logger.hpp"
#include "pagedserve/check.hpp"
#include "sched/step_budget.hpp"

namespace pagedserve {

scheduler_actor::scheduler_actor(const boost::asio::any_io_executor& ex, const boost::asio::any_io_executor& replies_ex,
                                 scheduler_limits limits, std::optional<std::uint64_t> seed)
    : actor(ex),
      state_(std::make_unique<scheduler_state>(limits)),
      replies_(boost::asio::make_strand(replies_ex)),
      log_(actor_logger("sched")) {
  if (seed) seed_source_.seed(*seed);
}

void scheduler_actor::on(submit_request m) {
  if (defer_while_lent(m)) return;
  log_->debug("[{}] submitted, {} prompt tokens", m.id.value, m.prompt.size());
  // Counted before any refusal: a refused member must not hold its group's first member back.
  std::optional<request_id> fork_of;
  if (m.group && m.group->size > 1) fork_of = count_group_member(m.group->key, m.group->size, m.id);
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
  s.fork_of = fork_of;
  s.awaiting_samples = m.group && m.group->size > 1 && !fork_of && groups_.contains(m.group->key);
  const int per_client = state_->limits.max_waiting_per_client;
  if (state_->n_waiting_of(s.client) >= per_client) {
    m.reply_to->tell(request_rejected{m.id, engine_error::too_many_requests,
                                      "this client already has " + std::to_string(per_client) +
                                          " requests waiting; retry when some have started"});
    return;
  }
  if (!state_->add(std::move(s))) {
    m.reply_to->tell(request_rejected{m.id, engine_error::queue_full, "the server's waiting queue is full; retry later"});
    return;
  }
  reply_to_[m.id] = std::move(m.reply_to);
  never_scheduled_[m.id] = m.arrived;
  start_step_if_idle();
}

void scheduler_actor::on(finish_request m) {
  if (defer_while_lent(m)) return;
  if (!reply_to_.contains(m.id)) return;  // already finished: the request actor has its final message
  if (m.error) ending_with_error_.try_emplace(m.id, std::move(*m.error));
  state_->request_finish(m.id, m.reason);
  start_step_if_idle();
}

void scheduler_actor::on(withdraw_sample m) {
  if (defer_while_lent(m)) return;
  count_group_member(m.group_key, m.group_size, std::nullopt);
  start_step_if_idle();
}

std::optional<request_id> scheduler_actor::count_group_member(std::uint64_t key, int size,
                                                              std::optional<request_id> member) {
  auto [g, arrived_first] = groups_.try_emplace(key, open_group{std::nullopt, size});
  open_group& group = g->second;
  const std::optional<request_id> fork_of = group.first;
  if (!group.first) group.first = member;
  if (--group.to_come > 0) return fork_of;
  if (group.first)  // everyone is here: the first member may be admitted
    if (sequence* first = state_->find(*group.first)) first->awaiting_samples = false;
  groups_.erase(g);
  return fork_of;
}

void scheduler_actor::on(finish_all m) {
  if (defer_while_lent(m)) return;
  log_->info("ending all {} requests: {}", reply_to_.size(), engine_error_code(m.error.code));
  for (const auto& [id, reply_to] : reply_to_) {
    ending_with_error_.try_emplace(id, m.error);
    state_->request_finish(id, finish_reason::cancelled);
  }
  closed_ = std::move(m.error);
  start_step_if_idle();
}

void scheduler_actor::start_step_if_idle() {
  publish_status();
  if (state_ && !executing_) send_schedule(std::nullopt, false);
}

void scheduler_actor::send_schedule(std::optional<schedule_next_step::executed> previous, bool follows_step) {
  ++step_.value;
  step_follows_ = follows_step;
  kv_->tell(schedule_next_step{step_, std::move(state_), std::move(previous)});
}

void scheduler_actor::on(step_scheduled m) {
  ps_check(m.step == step_ && m.state, "scheduler: a step_scheduled that answers no exchange");
  state_ = std::move(m.state);
  const auto now = std::chrono::steady_clock::now();
  for (const step_chunk& c : m.plan.chunks) {
    if (!c.admitted) continue;
    if (auto q = never_scheduled_.find(c.id); q != never_scheduled_.end()) {
      if (metrics_) metrics_->on_scheduled(now - q->second);
      never_scheduled_.erase(q);
    }
  }
  // The allocator has freed the finished sequences' blocks: now their clients may hear they ended.
  publish_status();
  std::vector<addressed_reply> replies;
  deliver(m.previous.updates, std::move(executed_logprobs_), replies);
  executed_logprobs_.clear();
  deliver(m.plan.finished, {}, replies);
  send_replies(std::move(replies));
  if (!m.plan.chunks.empty()) execute(m.plan);
  // Handled in arrival order; the first that starts an exchange lends the queues again, and those
  // after it wait once more.
  std::vector<scheduler_mailbox> deferred = std::move(deferred_);
  deferred_.clear();
  for (scheduler_mailbox& d : deferred) std::visit([this](auto& msg) { on(std::move(msg)); }, d);
}

void scheduler_actor::execute(step_plan& plan) {
  executing_ = true;
  ++n_steps_;
  execute_step e{step_, std::make_shared<const step_batch>(std::move(plan.batch)), {}, {}, std::move(dropped_), {}, step_follows_};
  dropped_.clear();
  for (const auto& [from, to] : plan.block_copies) e.block_copies.emplace_back(from.value, to.value);
  for (const step_chunk& c : plan.chunks) {
    e.draft_mirrors.push_back(c.drafts);
    if (c.samples) {
      e.sample_for.push_back(c.id);
      e.proposed.push_back(c.proposed);
    }
    if (known_to_executor_.insert(c.id).second) {
      const sequence* s = state_->find(c.id);
      const std::uint64_t seed = s->params->seed ? *s->params->seed : seed_source_();
      e.started.push_back({c.id, s->params, seed, {s->tokens.begin(), s->tokens.begin() + s->n_prompt}});
    }
  }
  publish_status();
  executor_->tell(std::move(e));
}

void scheduler_actor::on(step_executed m) {
  if (m.step != step_ || !executing_) return;  // stale
  const std::vector<step_chunk>& executed = state_->scheduled;
  if (log_->should_log(spdlog::level::trace)) {  // how well the cost model predicts steps
    int decodes = 0, prefill = 0;
    for (const step_chunk& c : executed) (c.n_tokens == 1 && c.samples ? decodes : prefill) += c.n_tokens;
    const double work = step_work(state_->cost, executed);
    log_->trace("step {}: {} decodes, {} prefill tokens, work {:.1f}, predicted {:.2f} ms, took {:.2f} ms", step_.value,
                decodes, prefill, work, 1e3 * state_->cost.predict(work), 1e3 * m.compute_seconds);
  }
  executing_ = false;
  if (!m.drafted.empty()) adopt_drafted_proposals(state_->scheduled, m.drafted);
  executed_logprobs_ = std::move(m.logprobs);
  send_schedule(schedule_next_step::executed{std::move(m.sampled), m.compute_seconds}, true);
}

void scheduler_actor::deliver(std::vector<sequence_update>& updates, std::vector<std::optional<token_logprobs>> logprobs,
                              std::vector<addressed_reply>& replies) {
  std::size_t next_logprobs = 0;  // updates take the executor's tokens in order, n_sampled each
  for (sequence_update& u : updates) {
    auto it = reply_to_.find(u.id);
    ps_check(it != reply_to_.end(), "update for a request with no reply address");
    const std::size_t first_logprobs = next_logprobs;
    next_logprobs += static_cast<std::size_t>(u.n_sampled);
    if (metrics_ && u.n_proposed > 0) metrics_->on_spec_decode(u.n_proposed, u.n_accepted);
    if (!u.new_tokens.empty()) {
      std::vector<token_logprobs> lp;
      for (std::size_t k = 0; k < u.new_tokens.size() && first_logprobs + k < logprobs.size(); ++k)
        if (logprobs[first_logprobs + k]) lp.push_back(std::move(*logprobs[first_logprobs + k]));
      replies.emplace_back(it->second, tokens_generated{u.id, std::move(u.new_tokens), std::move(lp)});
    }
    if (!u.finished) continue;
    addressed_reply& final_reply = replies.emplace_back(std::move(it->second), request_finished{u.id, *u.finished, u.used});
    if (auto e = ending_with_error_.find(u.id); e != ending_with_error_.end()) {
      // A request that ended on its own in the same step keeps its real reason.
      if (*u.finished == finish_reason::cancelled) final_reply.message = request_failed{u.id, std::move(e->second), u.used};
      ending_with_error_.erase(e);
    }
    reply_to_.erase(it);
    never_scheduled_.erase(u.id);
    if (known_to_executor_.erase(u.id)) dropped_.push_back(u.id);
    log_->debug("[{}] finished: {}", u.id.value, finish_reason_name(*u.finished));
  }
}

void scheduler_actor::send_replies(std::vector<addressed_reply> replies) {
  if (replies.empty()) return;
  boost::asio::post(replies_, [replies = std::move(replies)]() mutable {
    for (addressed_reply& r : replies) r.to->tell(std::move(r.message));
  });
}

scheduler_status scheduler_actor::queue_status() const {
  return {state_->n_running(), state_->n_waiting(), state_->n_preemptions, n_steps_};
}

void scheduler_actor::publish_status() {
  if (board_ && state_) board_->publish(queue_status());
}

void scheduler_actor::on(report_scheduler_status m) {
  if (defer_while_lent(m)) return;
  m.reply(queue_status());
}

}  // namespace pagedserve
