#include "net/sse_generation.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <charconv>

#include "pagedserve/client_link.hpp"
#include "actors/logger.hpp"
#include "pagedserve/utf8.hpp"

namespace pagedserve::net {
namespace {

// One choice's link: its events go to the generation under the choice's index.
class choice_link : public client_link {
 public:
  choice_link(std::shared_ptr<sse_generation> generation, std::size_t index)
      : generation_(std::move(generation)), index_(index) {}
  void send_tokens(token_event event) override { generation_->send_tokens(index_, std::move(event)); }
  void send_final(final_event event) override { generation_->send_final(index_, std::move(event)); }
  std::uint64_t client_key() const override { return generation_->client_key(); }

 private:
  std::shared_ptr<sse_generation> generation_;
  std::size_t index_;
};

}  // namespace

sse_generation::sse_generation(std::shared_ptr<http_session> session, engine_api& e, openai::generation_request request,
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
  std::vector<generate_command> commands(choices_.size());
  for (std::size_t p = 0; p < n_prompts; ++p) {
    // The prompt's samples share its KV blocks (and its one tokenization): a key unique to it.
    const sample_group group{engine_.new_sample_group_key(), static_cast<int>(n), std::make_shared<shared_prompt>()};
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t index = p * n + i;
      generate_command& command = commands[index];
      command.id = meta_.id + "/" + std::to_string(index);  // for logs
      command.params = request_.params;
      if (n > 1) command.group = group;
      // n samples of one prompt must differ: sample i of a seeded request uses seed + i.
      if (command.params.seed) *command.params.seed += i;
      choice& c = choices_[index];
      c.prompt_index = static_cast<int>(p);
      if (chat) {
        command.messages = request_.messages;
        command.chat = request_.chat;
      } else {
        const openai::prompt_input& in = request_.prompts[p];
        if (in.text) command.prompt = *in.text;
        else command.prompt_ids = in.ids;
        if (request_.echo) c.pending.text = in.text ? *in.text : engine_.vocabulary().decode(in.ids, true);
      }
    }
  }
  actor_logger("net")->debug("{}: {} choice(s), stream {}", meta_.id, choices_.size(), request_.stream);
  // Submitted once every choice is set up: an early final event (a refusal) finds them all.
  const std::chrono::seconds timeout(session_->config().request_timeout_seconds);
  for (std::size_t i = 0; i < choices_.size(); ++i)
    choices_[i].generation =
        engine_.submit(std::move(commands[i]), std::make_shared<choice_link>(shared_from_this(), i), timeout);
}

void sse_generation::send_tokens(std::size_t index, token_event event) {
  asio::post(session_->executor(), [self = shared_from_this(), index, e = std::move(event)]() mutable {
    self->on_tokens(index, std::move(e));
  });
}

std::uint64_t sse_generation::client_key() const { return session_->client_key(); }

void sse_generation::send_final(std::size_t index, final_event event) {
  asio::post(session_->executor(), [self = shared_from_this(), index, e = std::move(event)]() mutable {
    self->on_final(index, std::move(e));
  });
}

void sse_generation::on_tokens(std::size_t index, token_event e) {
  if (finished_) return;
  token_event& pending = choices_[index].pending;
  pending.text += e.text;
  pending.ids.insert(pending.ids.end(), e.ids.begin(), e.ids.end());
  pending.logprobs.insert(pending.logprobs.end(), std::make_move_iterator(e.logprobs.begin()),
                          std::make_move_iterator(e.logprobs.end()));
  pending.reasoning += e.reasoning;
  pending.tool_calls.insert(pending.tool_calls.end(), std::make_move_iterator(e.tool_calls.begin()),
                            std::make_move_iterator(e.tool_calls.end()));
  if (!request_.stream) return;
  send_stream_head();
  flush();
}

void sse_generation::on_final(std::size_t index, final_event e) {
  choice& c = choices_[index];
  if (c.final) return;
  const bool ok = e.reason.has_value();
  if (!ok && !failed_ && !finished_) {
    failed_ = openai::error_from_engine(e.error);
    actor_logger("net")->debug("{}: choice {} failed: {}", meta_.id, index, engine_error_code(e.error.code));
  }
  c.final = std::move(e);
  c.generation.reset();  // it holds us (its link): keeping it past its final event would be a cycle
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
  if (all_final()) send_stream_head();  // every choice may have ended without a single token event
  flush();
}

header_list sse_generation::response_headers() const {
  header_list extra;
  if (!request_.ignored_fields.empty())
    extra.emplace_back("X-Ignored-Fields", openai::ignored_fields_header(request_.ignored_fields));
  return extra;
}

void sse_generation::send_stream_head() {
  if (head_sent_) return;
  header_list extra = response_headers();
  extra.emplace_back("Cache-Control", "no-cache");
  extra.emplace_back("X-Accel-Buffering", "no");
  session_->send(session_->head(http::status::ok, "text/event-stream", std::nullopt, extra));
  head_sent_ = true;
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
    if (!c.final && c.generation) c.generation->cancel();
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
    std::vector<openai::choice_piece> pieces;
    if (!c.pending.text.empty() || !c.pending.reasoning.empty() || has_logprobs ||
        (finishing && c.pending.tool_calls.empty())) {
      openai::choice_piece& piece = pieces.emplace_back();
      piece.text = std::move(c.pending.text);
      piece.reasoning = std::move(c.pending.reasoning);
      piece.ids = std::move(c.pending.ids);
      piece.logprobs = std::move(c.pending.logprobs);
    }
    // Each call as OpenAI streams it: its head (id, name, arguments ""), then its arguments.
    for (tool_call& call : c.pending.tool_calls) {
      std::string arguments = std::move(call.arguments);
      call.arguments.clear();
      pieces.emplace_back().tool_calls.push_back(call);
      pieces.emplace_back().tool_calls.push_back({call.index, "", "", std::move(arguments)});
    }
    for (openai::choice_piece& piece : pieces) {
      piece.index = static_cast<int>(i);
      piece.with_role = !completions && !c.started;
      piece.text_offset = c.text_offset;
      if (finishing && &piece == &pieces.back()) piece.finish_reason = finish_reason_of(*c.final);
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
    piece.reasoning = std::move(c.pending.reasoning);
    piece.tool_calls = std::move(c.pending.tool_calls);
    piece.finish_reason = finish_reason_of(*c.final);
    pieces.push_back(std::move(piece));
  }
  const std::string body = openai::encode_response(meta_, pieces, total_usage(), encode_);
  session_->send(session_->head(http::status::ok, "application/json", body.size(), response_headers()) + body);
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
    u.spec_draft_tokens += c.final->used.spec_draft_tokens;
    u.spec_accepted_tokens += c.final->used.spec_accepted_tokens;
  }
  for (const int p : prompt_tokens) u.prompt_tokens += p;
  return u;
}

std::string sse_generation::finish_reason_of(const final_event& e) {
  if (*e.reason == finish_reason::cancelled) return std::string(openai::finish_reason_text(*e.reason));
  return std::string(client_finish_reason(e));
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
