#pragma once
// One POST /v1/completions or /v1/chat/completions being answered: a generation per choice (n per
// prompt), each with a link that knows its choice index, their events gathered by that index into
// one JSON response or a stream of server-sent events.
//
// Streaming: the 200 and its head go out with the first token of any choice, so an error that
// comes first (queue_full, context_length_exceeded) is still a real HTTP status. After that an
// error is an SSE `data: {"error":...}` event, then [DONE]. Tokens that arrive while a write is in
// flight are coalesced per choice into the next event (no unbounded queue: at most the request's
// own text is held). Every SSE event is one HTTP chunk flushed on its own.
//
// Client gone (the session says so): every choice's generation is cancelled; nothing more is
// written. The object lives until the last choice's final event (the choices' links hold it).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/http_session.hpp"
#include "pagedserve/engine_api.hpp"
#include "pagedserve/generation_events.hpp"
#include "api/openai_response.hpp"

namespace pagedserve::net {

class sse_generation : public http_exchange, public std::enable_shared_from_this<sse_generation> {
 public:
  sse_generation(std::shared_ptr<http_session> session, engine_api& e, openai::generation_request request,
                 openai::response_meta meta);
  // Submits one generation per choice.
  void start();

  // The events of choice `index` (through its link, sse_generation.cpp); any thread.
  void send_tokens(std::size_t index, token_event event);
  void send_final(std::size_t index, final_event event);
  std::uint64_t client_key() const;
  void on_writable() override;
  void on_client_gone() override;

 private:
  struct choice {
    std::shared_ptr<generation_handle> generation;
    int prompt_index = 0;
    token_event pending;      // stream: not yet written; non-stream: everything so far
    std::optional<final_event> final;
    bool started = false;     // stream: the first delta (with the role) is out
    bool final_written = false;
    std::size_t text_offset = 0;  // completions logprobs: token text written so far
  };

  void on_tokens(std::size_t index, token_event e);
  void on_final(std::size_t index, final_event e);
  void cancel_all();
  void flush();            // stream: writes what is pending when the session is not writing
  void respond_whole();    // non-stream: the JSON response once every choice ended
  void respond_error(const openai::api_error& e);
  usage total_usage() const;
  void send_stream_head();            // once, before the first event
  header_list response_headers() const;  // X-Ignored-Fields when the request had unknown fields
  static std::string finish_reason_of(const final_event& e);  // "tool_calls" when the choice made calls
  std::string sse_event(std::string_view payload) const;  // "data: ...\n\n" as one HTTP chunk
  bool all_final() const { return n_final_ == choices_.size(); }

  std::shared_ptr<http_session> session_;
  engine_api& engine_;
  openai::generation_request request_;
  openai::response_meta meta_;
  openai::encode_options encode_;
  std::vector<choice> choices_;
  std::size_t n_final_ = 0;
  std::optional<openai::api_error> failed_;  // the first choice's error
  bool head_sent_ = false;
  bool error_written_ = false;
  bool finished_ = false;  // the response is complete (or abandoned): the session has moved on
};

}  // namespace pagedserve::net
