#include "net/sse_generation.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <charconv>

#include "actors/logger.hpp"
#include "pagedserve/utf8.hpp"

namespace pagedserve::net {

sse_generation::sse_generation(std::shared_ptr<http_session> session, engine& e, openai::generation_request request,
                               openai::response_meta meta)
    : session_(std::move(session)), engine_(e), request_(std::move(request)), meta_(std::move(meta)) {
  encode_.vocabulary = &engine_.vocabulary();
  encode_.logprobs = request_.logprobs;
  encode_.usage_null = request_.include_usage;
}

void sse_generation::start() {
  const bool chat = request_.kind == openai::endpoint::chat_completions;
  const std::size_t n_prompts = chat ? 1 : request_.prompts.size();
  const auto n = static_cast<std::size_t>(request_.n);
  choices_.resize(n_prompts * n);
  // An HTTP/1.0 client gets the stream unframed, ended by closing the connection.
  if (request_.stream && !session_->chunked()) session_->end_connection();
  auto self = shared_from_this();
  for (std::size_t p = 0; p < n_prompts; ++p) {
    // The prompt's samples share its KV blocks: a key unique to it, from the engine's id counter.
    const sample_group group{engine_.next_request_id().value, static_cast<int>(n), std::make_shared<shared_prompt>()};
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t index = p * n + i;
      generate_command command;
      command.id = meta_.id + "/" + std::to_string(index);
      command.params = request_.params;
      if (n > 1) command.group = group;
      // n samples of one prompt must differ: sample i of a seeded request uses seed + i.
      if (command.params.seed) *command.params.seed += i;
      choice& c = choices_[index];
      c.prompt_index = static_cast<int>(p);
      if (chat) {
        command.messages = request_.messages;
      } else {
        const openai::prompt_input& in = request_.prompts[p];
        if (in.text) command.prompt = *in.text;
        else command.prompt_ids = in.ids;
        if (request_.echo) c.pending.text = in.text ? *in.text : engine_.vocabulary().decode(in.ids, true);
      }
      c.actor = std::make_shared<request_actor>(engine_.executor(), engine_, self, std::move(command),
                                                std::chrono::seconds(session_->config().request_timeout_seconds));
    }
  }
  actor_logger("net")->debug("{}: {} choice(s), stream {}", meta_.id, choices_.size(), request_.stream);
  for (choice& c : choices_) c.actor->tell(start_generation{});
}

std::optional<std::size_t> sse_generation::choice_of(const std::string& client_id) const {
  const std::size_t slash = client_id.rfind('/');
  if (slash == std::string::npos) return std::nullopt;
  std::size_t index = 0;
  const char* first = client_id.data() + slash + 1;
  const char* last = client_id.data() + client_id.size();
  const auto [ptr, ec] = std::from_chars(first, last, index);
  if (ec != std::errc{} || ptr != last || index >= choices_.size()) return std::nullopt;
  return index;
}

void sse_generation::send_tokens(const std::string& client_id, token_event event) {
  asio::post(session_->executor(), [self = shared_from_this(), client_id, e = std::move(event)]() mutable {
    if (auto index = self->choice_of(client_id)) self->on_tokens(*index, std::move(e));
  });
}

std::uint64_t sse_generation::client_key() const { return session_->client_key(); }

void sse_generation::send_final(const std::string& client_id, final_event event) {
  asio::post(session_->executor(), [self = shared_from_this(), client_id, e = std::move(event)]() mutable {
    if (auto index = self->choice_of(client_id)) self->on_final(*index, std::move(e));
  });
}

void sse_generation::on_tokens(std::size_t index, token_event e) {
  if (finished_) return;
  token_event& pending = choices_[index].pending;
  pending.text += e.text;
  pending.ids.insert(pending.ids.end(), e.ids.begin(), e.ids.end());
  pending.logprobs.insert(pending.logprobs.end(), std::make_move_iterator(e.logprobs.begin()),
                          std::make_move_iterator(e.logprobs.end()));
  if (!request_.stream) return;
  if (!head_sent_) {
    session_->send(session_->head(http::status::ok, "text/event-stream", std::nullopt,
                                  {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}}));
    head_sent_ = true;
  }
  flush();
}

void sse_generation::on_final(std::size_t index, final_event e) {
  choice& c = choices_[index];
  if (c.final) return;
  const bool ok = e.reason.has_value();
  if (!ok && !failed_ && !finished_) {
    failed_ = openai::error_from_engine(e.error_code, e.error_message);
    actor_logger("net")->debug("{}: choice {} failed: {}", meta_.id, index, e.error_code);
  }
  c.final = std::move(e);
  c.actor.reset();  // the actor holds us (its link): keeping it past its final event would be a cycle
  ++n_final_;
  if (finished_) return;
  if (!ok) {
    cancel_all();
    if (!request_.stream || !head_sent_) return respond_error(*failed_);
  }
  if (!request_.stream) {
    if (all_final()) respond_whole();
    return;
  }
  if (!head_sent_ && all_final()) {  // every choice ended without a single token event
    session_->send(session_->head(http::status::ok, "text/event-stream", std::nullopt, {{"Cache-Control", "no-cache"}}));
    head_sent_ = true;
  }
  flush();
}

void sse_generation::on_writable() { flush(); }

void sse_generation::on_client_gone() {
  if (finished_) return;
  finished_ = true;
  actor_logger("net")->debug("{}: client gone, cancelling", meta_.id);
  cancel_all();
  session_->finish_response();
}

void sse_generation::cancel_all() {
  for (choice& c : choices_)
    if (!c.final) c.actor->tell(cancel_generation{});
}

void sse_generation::flush() {
  if (finished_ || !head_sent_ || session_->sending() || session_->client_gone()) return;
  const bool completions = request_.kind == openai::endpoint::completions;
  std::string bytes;
  for (std::size_t i = 0; i < choices_.size(); ++i) {
    choice& c = choices_[i];
    const bool succeeded = c.final && c.final->reason && *c.final->reason != finish_reason::cancelled;
    const bool finishing = succeeded && !c.final_written;
    const bool has_logprobs = request_.logprobs && !c.pending.ids.empty();
    if (!c.pending.text.empty() || has_logprobs || finishing) {
      openai::choice_piece piece;
      piece.index = static_cast<int>(i);
      piece.text = std::move(c.pending.text);
      piece.ids = std::move(c.pending.ids);
      piece.logprobs = std::move(c.pending.logprobs);
      piece.with_role = !completions && !c.started;
      piece.text_offset = c.text_offset;
      if (finishing) piece.finish_reason = std::string(openai::finish_reason_text(*c.final->reason));
      if (completions && request_.logprobs)
        for (const token_id id : piece.ids) c.text_offset += utf8_sanitize(engine_.vocabulary().token_text(id)).size();
      bytes += sse_event(openai::encode_chunk(meta_, piece, encode_));
      c.started = true;
    }
    c.pending = {};
    if (c.final) c.final_written = true;  // failed or cancelled choices are covered by the error event
  }
  if (failed_ && !error_written_) {
    bytes += sse_event(openai::encode_error(*failed_));
    error_written_ = true;
  }
  const bool done = all_final();
  if (done) {
    if (request_.include_usage && !failed_) bytes += sse_event(openai::encode_usage_chunk(meta_, total_usage()));
    bytes += sse_event("[DONE]");
    if (session_->chunked()) bytes += "0\r\n\r\n";
  }
  session_->send(std::move(bytes));
  if (done) {
    finished_ = true;
    session_->finish_response();
  }
}

void sse_generation::respond_whole() {
  std::vector<openai::choice_piece> pieces;
  pieces.reserve(choices_.size());
  for (std::size_t i = 0; i < choices_.size(); ++i) {
    choice& c = choices_[i];
    openai::choice_piece piece;
    piece.index = static_cast<int>(i);
    piece.text = std::move(c.pending.text);
    piece.ids = std::move(c.pending.ids);
    piece.logprobs = std::move(c.pending.logprobs);
    piece.finish_reason = std::string(openai::finish_reason_text(*c.final->reason));
    pieces.push_back(std::move(piece));
  }
  const std::string body = openai::encode_response(meta_, pieces, total_usage(), encode_);
  session_->send(session_->head(http::status::ok, "application/json", body.size()) + body);
  finished_ = true;
  session_->finish_response();
}

void sse_generation::respond_error(const openai::api_error& e) {
  const std::string body = openai::encode_error(e);
  header_list extra;
  if (e.status == 429 || e.status == 503) extra.emplace_back("Retry-After", "1");
  session_->send(session_->head(static_cast<http::status>(e.status), "application/json", body.size(), extra) + body);
  finished_ = true;
  session_->finish_response();
}

usage sse_generation::total_usage() const {
  // The prompt counts once per prompt, however many samples it has (OpenAI's usage for n > 1).
  usage u;
  std::vector<int> prompt_tokens(request_.prompts.empty() ? 1 : request_.prompts.size(), 0);
  for (const choice& c : choices_) {
    if (!c.final) continue;
    int& p = prompt_tokens[static_cast<std::size_t>(c.prompt_index)];
    p = std::max(p, c.final->used.prompt_tokens);
    u.completion_tokens += c.final->used.completion_tokens;
  }
  for (const int p : prompt_tokens) u.prompt_tokens += p;
  return u;
}

std::string sse_generation::sse_event(std::string_view payload) const {
  std::string event = "data: ";
  event += payload;
  event += "\n\n";
  if (!session_->chunked()) return event;
  char size[20];
  const auto [end, ec] = std::to_chars(size, size + sizeof size, event.size(), 16);
  return std::string(size, end) + "\r\n" + event + "\r\n";
}

}  // namespace pagedserve::net
