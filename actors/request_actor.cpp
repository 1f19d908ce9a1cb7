#include "actors/request_actor.hpp"

#include "grammar/output_format_compiler.hpp"

#include <algorithm>
#include <random>

#include "actors/logger.hpp"
#include "chat/chat_prompt.hpp"
#include "chat/chat_tool_messages.hpp"
#include "chat/tool_call_schema.hpp"

namespace pagedserve {

request_actor::request_actor(const boost::asio::any_io_executor& ex, engine& e, std::shared_ptr<client_link> link,
                             generate_command command, std::chrono::seconds timeout)
    : actor(ex),
      engine_(e),
      link_(std::move(link)),
      command_(std::move(command)),
      timeout_(timeout),
      timer_(strand_),
      log_(actor_logger("req")) {}

std::expected<std::vector<token_id>, std::string> request_actor::render_prompt() const {
  if (command_.prompt_ids) return *command_.prompt_ids;
  if (command_.prompt) return engine_.vocabulary().encode(*command_.prompt, true);
  if (const chat_setup* chat = engine_.chat()) {
    chat_template_context ctx;
    for (const chat_message& m : command_.messages) {
      chat_value::object fields{{"role", m.role}, {"content", m.content}};
      if (!m.name.empty()) fields.emplace_back("name", m.name);
      if (!m.tool_call_id.empty()) fields.emplace_back("tool_call_id", m.tool_call_id);
      if (!m.reasoning_content.empty()) fields.emplace_back("reasoning_content", m.reasoning_content);
      if (!m.tool_calls_json.empty()) {
        auto calls = chat_tool_calls_value(m.tool_calls_json);
        if (!calls) return std::unexpected(calls.error());
        fields.emplace_back("tool_calls", std::move(*calls));
      }
      ctx.messages.push_back(std::move(fields));
    }
    const chat_options& o = command_.chat;
    auto variables = chat_request_variables(o.tool_choice == tool_choice_mode::none ? "" : o.tools_json,
                                            o.template_kwargs_json, o.reasoning_effort);
    if (!variables) return std::unexpected(variables.error());
    ctx.variables = std::move(*variables);
    ctx.add_generation_prompt = true;
    ctx.bos_token = chat->bos_token;
    ctx.eos_token = chat->eos_token;
    ctx.now = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
    // The template writes BOS and special tokens as text; the tokenizer matches them, and those typed
    // into contents as the server is configured to.
    const auto mode = special_tokens_in_content_from(engine_.config().special_tokens_in_content);
    auto ids = chat_prompt_encode(chat->renderer, std::move(ctx), engine_.vocabulary(),
                                  mode.value_or(special_tokens_in_content::parse));
    if (!ids) return std::unexpected("chat template: " + ids.error());
    return ids;
  }
  // llama2.c models carry no chat template: the conversation is their contents, one per line.
  std::string text;
  for (const chat_message& m : command_.messages) {
    if (!text.empty()) text += '\n';
    text += m.content;
  }
  return engine_.vocabulary().encode(text, true);
}

void request_actor::on(start_generation) {
  // A prompt whose text alone is too long for the context is refused before anyone tokenizes it.
  std::size_t bytes = command_.prompt ? command_.prompt->size() : 0;
  for (const chat_message& m : command_.messages) bytes += m.content.size() + m.tool_calls_json.size();
  if (bytes > engine_.max_prompt_bytes())
    return fail(engine_error::context_length_exceeded,
                "the prompt's " + std::to_string(bytes) + " bytes of text cannot fit the " +
                    std::to_string(engine_.max_sequence_tokens()) + "-token context");
  // command_ is not changed until prompt_prepared arrives, so the prompt thread may read it meanwhile.
  boost::asio::post(engine_.prompt_executor(), [self = shared_from_this()] {
    const auto& group = self->command_.group;
    if (!group || !group->prompt) return self->tell(prompt_prepared{self->render_prompt()});
    shared_prompt& shared = *group->prompt;  // n samples of one prompt: rendered and tokenized once
    std::call_once(shared.once, [&] { shared.tokens = self->render_prompt(); });
    self->tell(prompt_prepared{shared.tokens});
  });
}

void request_actor::on(prompt_prepared m) {
  if (ended_) return;  // cancelled while the prompt was prepared
  if (!m.tokens) return fail(engine_error::invalid_request, m.tokens.error());
  std::vector<token_id> prompt = std::move(*m.tokens);
  const int n_prompt = static_cast<int>(prompt.size());
  if (command_.prompt_ids) {
    const int n_vocab = engine_.vocabulary().vocab_size();
    if (prompt.empty()) return fail(engine_error::invalid_request, "the prompt's token ids must not be empty");
    for (const token_id t : prompt)
      if (t < 0 || t >= n_vocab)
        return fail(engine_error::invalid_request, "prompt token id " + std::to_string(t) +
                                                       " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
  }
  // A tokenizer that adds no BOS (Qwen, GPT-2) turns "" into no tokens: nothing to prefill, nothing
  // to condition on (vLLM refuses it too).
  if (prompt.empty()) return fail(engine_error::invalid_request, "the prompt is empty: it encodes to no tokens");
  n_prompt_ = n_prompt;
  const int context = engine_.max_sequence_tokens();
  if (n_prompt >= context)
    return fail(engine_error::context_length_exceeded,
                "prompt has " + std::to_string(n_prompt) + " tokens; the context holds " + std::to_string(context));
  sampling_params& p = command_.params;
  if (p.max_tokens == 0) p.max_tokens = engine_.default_max_tokens(n_prompt);
  if (p.max_tokens > context - n_prompt)  // not n_prompt + max_tokens: max_tokens may be near INT_MAX
    return fail(engine_error::invalid_max_tokens,
                "max_tokens " + std::to_string(p.max_tokens) + " exceeds the " + std::to_string(context - n_prompt) +
                    " tokens left in the context after a " + std::to_string(n_prompt) + "-token prompt");
  if (auto refused = prepare_output(prompt)) return fail(engine_error::invalid_request, std::move(*refused));
  id_ = engine_.next_request_id();
  detokenizer_.emplace(engine_.vocabulary(), prompt.back());
  log_->debug("[{}] client id '{}', {} prompt tokens, max_tokens {}", id_.value, command_.id, n_prompt, p.max_tokens);
  submitted_ = true;
  arm_timeout();
  const std::uint64_t salt = p.cache_salt.empty() ? 0 : std::hash<std::string>{}(p.cache_salt);
  const std::uint64_t client = link_->client_key();  // fair admission and quotas count by it
  engine_.scheduler().tell(submit_request{id_, command_.group, salt, std::move(prompt), std::make_shared<const sampling_params>(p),
                                          engine_.stop_token_ids(), shared_from_this(), accepted_at_, client});
}

std::optional<std::string> request_actor::prepare_output(const std::vector<token_id>& prompt) {
  const chat_setup* chat = engine_.chat();
  const chat_options& o = command_.chat;
  const bool forced = o.tool_choice == tool_choice_mode::required || o.tool_choice == tool_choice_mode::named;
  if (command_.messages.empty()) return std::nullopt;
  if (!chat) {
    if (forced) return "the model has no chat template, so no tool call can be forced";
    return std::nullopt;
  }
  const bool tools = !o.tools_json.empty() && o.tool_choice != tool_choice_mode::none;
  const tool_call_family family = tools ? chat->tool_calls : tool_call_family::none;
  const reasoning_syntax syntax = reasoning_syntax_resolve(engine_.config().reasoning_parser, chat->writes_reasoning);
  if (syntax != reasoning_syntax::none || family != tool_call_family::none) {
    // The prompt's last tokens tell whether the template opened <think> for the model.
    const std::size_t n_tail = std::min<std::size_t>(prompt.size(), 8);
    const bool opened = syntax != reasoning_syntax::none &&
                        prompt_opens_reasoning(engine_.vocabulary().decode(
                            std::span(prompt).subspan(prompt.size() - n_tail), false));
    output_.emplace(syntax, opened, family);
  }
  if (!forced) return std::nullopt;
  auto constraint = tool_call_constraint_build(
      chat->tool_calls, o.tools_json,
      o.tool_choice == tool_choice_mode::named ? std::optional<std::string_view>(o.tool_choice_name) : std::nullopt);
  if (!constraint) return constraint.error();
  command_.params.format = {output_format::kind::json_schema, std::move(constraint->schema),
                            std::move(constraint->prefix), std::move(constraint->suffix)};
  // Compiled here, off the executor (which then finds it cached): a tool whose parameters schema the
  // decoder cannot enforce is refused, never served unconstrained.
  if (auto compiled = grammar::compile_output_format_cached(command_.params.format); !compiled)
    return "tool_choice cannot be enforced: " + compiled.error();
  return std::nullopt;
}

token_event request_actor::parse_output(std::string text, bool last) {
  token_event e;
  if (!output_) {
    e.text = std::move(text);
    return e;
  }
  chat_output_delta d = text.empty() ? chat_output_delta{} : output_->push(text);
  if (last) {
    chat_output_delta rest = output_->finish();
    d.content += rest.content;
    d.reasoning += rest.reasoning;
    for (parsed_tool_call& c : rest.calls) d.calls.push_back(std::move(c));
  }
  e.text = std::move(d.content);
  e.reasoning = std::move(d.reasoning);
  reasoning_ += e.reasoning;
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  for (parsed_tool_call& c : d.calls) {
    if (!command_.chat.parallel_tool_calls && !calls_.empty()) break;  // one call asked for: the first
    tool_call call{static_cast<int>(calls_.size()), "call_", std::move(c.name), std::move(c.arguments)};
    for (int i = 0; i < 24; ++i) call.id += alphabet[rng() % (sizeof alphabet - 1)];
    calls_.push_back(call);
    e.tool_calls.push_back(std::move(call));
  }
  return e;
}

void request_actor::on(cancel_generation m) {
  if (ended_) return;
  if (!submitted_) {  // its prompt is still being prepared: nothing reached the scheduler
    if (m.error) return fail(m.error->code, std::move(m.error->message));
    return finish(finish_reason::cancelled, {});
  }
  engine_.scheduler().tell(finish_request{id_, finish_reason::cancelled, std::move(m.error)});
}

void request_actor::arm_timeout() {
  if (timeout_.count() <= 0) return;
  timer_.expires_after(timeout_);
  // The handler holds the actor: it lives until the timer fires or is cancelled by the final event.
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->ended_) return;
    self->log_->info("[{}] timed out after {} s", self->id_.value, self->timeout_.count());
    self->engine_.scheduler().tell(
        finish_request{self->id_, finish_reason::cancelled,
                       request_error{engine_error::request_timeout,
                                     "the request ran longer than the server's limit of " +
                                         std::to_string(self->timeout_.count()) + " s"}});
  });
}

std::string request_actor::release_text(std::string fresh) {
  held_ += fresh;
  const auto& stops = command_.params.stop;
  std::size_t cut = std::string::npos;
  for (const std::string& s : stops) cut = std::min(cut, held_.find(s));
  if (cut != std::string::npos) {
    stop_matched_ = true;
    std::string out = held_.substr(0, cut);
    held_.clear();
    return out;
  }
  // Keep back the longest tail that could still grow into a stop string.
  std::size_t keep = 0;
  for (const std::string& s : stops)
    for (std::size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n)
      if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

void request_actor::on(tokens_generated m) {
  if (m.id != id_) return;
  // Metrics count what the engine sampled, also past a stop string (vLLM's generation tokens).
  const auto now = clock::now();
  serving_metrics& metrics = engine_.metrics();
  if (n_generated_ == 0) {
    first_token_at_ = now;
    metrics.on_first_token(n_prompt_, now - accepted_at_);
    metrics.on_tokens(static_cast<int>(m.tokens.size()), std::nullopt);
  } else {
    metrics.on_tokens(static_cast<int>(m.tokens.size()), now - last_tokens_at_);
  }
  last_tokens_at_ = now;
  n_generated_ += static_cast<int>(m.tokens.size());
  if (ended_ || stop_matched_) return;
  const auto& stop_ids = engine_.stop_token_ids();
  std::string fresh;
  for (token_id t : m.tokens)
    if (command_.params.ignore_eos || std::ranges::find(stop_ids, t) == stop_ids.end()) fresh += detokenizer_->push(t);
  std::string text = release_text(std::move(fresh));
  if (stop_matched_) engine_.scheduler().tell(finish_request{id_, finish_reason::stop, std::nullopt});
  token_event e = parse_output(std::move(text), false);
  e.ids = std::move(m.tokens);
  e.logprobs = std::move(m.logprobs);
  link_->send_tokens(std::move(e));
}

void request_actor::on(request_finished m) {
  if (ended_ || m.id != id_) return;
  token_event tail = parse_output(stop_matched_ ? std::string() : held_ + detokenizer_->flush(), true);
  if (!tail.text.empty() || !tail.reasoning.empty() || !tail.tool_calls.empty()) link_->send_tokens(std::move(tail));
  finish(stop_matched_ ? finish_reason::stop : m.reason, m.used);
}

void request_actor::finish(finish_reason reason, usage used) {
  const auto now = clock::now();
  auto ms = [](clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  request_timings t;
  t.total_ms = ms(now - accepted_at_);
  if (n_generated_ > 0) {
    t.time_to_first_token_ms = ms(first_token_at_ - accepted_at_);
    const double decode_s = ms(now - first_token_at_) / 1000.0;
    t.tokens_per_second = n_generated_ > 1 && decode_s > 0 ? (n_generated_ - 1) / decode_s : 0.0;
  }
  withdraw_from_group();
  ended_ = true;
  timer_.cancel();
  engine_.metrics().on_finished(reason, used, now - accepted_at_,
                                n_generated_ > 0 ? std::optional(serving_metrics::seconds(now - first_token_at_))
                                                 : std::nullopt);
  log_->debug("[{}] done: {}, {} tokens", id_.value, finish_reason_name(reason), used.completion_tokens);
  link_->send_final({reason, used, t, {}, std::move(reasoning_), std::move(calls_)});
}

void request_actor::on(request_rejected m) {
  if (ended_ || m.id != id_) return;
  fail(m.code, std::move(m.message));
}

void request_actor::on(request_failed m) {
  if (ended_ || m.id != id_) return;
  log_->debug("[{}] ended with error {}", id_.value, engine_error_code(m.error.code));
  fail(m.error.code, std::move(m.error.message), m.used);
}

void request_actor::withdraw_from_group() {
  const auto& group = command_.group;
  if (!submitted_ && group && group->size > 1) engine_.scheduler().tell(withdraw_sample{group->key, group->size});
}

void request_actor::fail(engine_error code, std::string message, usage used) {
  withdraw_from_group();
  ended_ = true;
  timer_.cancel();
  engine_.metrics().on_failed(engine_error_code(code));
  final_event e;
  e.used = used;
  e.error = {code, std::move(message)};
  link_->send_final(std::move(e));
}

}  // namespace pagedserve
