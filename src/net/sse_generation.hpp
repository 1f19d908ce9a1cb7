#pragma once
// One POST /v1/completions or /v1/chat/completions being answered: a request actor per choice
// (n per prompt; ids "<response id>/<choice index>"), their events gathered by choice index into
// one JSON response or a stream of server-sent events.
//
// Streaming: the 200 and its head go out with the first token of any choice, so an error that
// comes first (queue_full, context_length_exceeded) is still a real HTTP status. After that an
// error is an SSE `data: {"error":...}` event, then [DONE]. Tokens that arrive while a write is in
// flight are coalesced per choice into the next event (no unbounded queue: at most the request's
// own text is held). Every SSE event is one HTTP chunk flushed on its own.
//
// Client gone (the session says so): every choice's actor is told cancel_generation; nothing more
// is written. The object lives until the last actor's final event (the actors hold it).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/request_actor.hpp"
#include "net/http_session.hpp"
#include "pagedserve/openai_response.hpp"

namespace pagedserve::net {

class sse_generation : public client_link,
                       public http_exchange,
                       public std::enable_shared_from_this<sse_generation> {
 public:
  sse_generation(std::shared_ptr<http_session> session, engine& e, openai::generation_request request,
                 openai::response_meta meta);
  // Starts one request actor per choice.
  void start();

  void send_tokens(const std::string& client_id, token_event event) override;
  void send_final(const std::string& client_id, final_event event) override;
  std::uint64_t client_key() const override;
  void on_writable() override;
  void on_client_gone() override;

 private:
  struct choice {
    std::shared_ptr<request_actor> actor;
    int prompt_index = 0;
    token_event pending;      // stream: not yet written; non-stream: everything so far
    std::optional<final_event> final;
    bool started = false;     // stream: the first delta (with the role) is out
    bool final_written = false;
    std::size_t text_offset = 0;  // completions logprobs: token text written so far
  };

  std::optional<std::size_t> choice_of(const std::string& client_id) const;
  void on_tokens(std::size_t index, token_event e);
  void on_final(std::size_t index, final_event e);
  void cancel_all();
  void flush();            // stream: writes what is pending when the session is not writing
  void respond_whole();    // non-stream: the JSON response once every choice ended
  void respond_error(const openai::api_error& e);
  usage total_usage() const;
  std::string sse_event(std::string_view payload) const;  // "data: ...\n\n" as one HTTP chunk
  bool all_final() const { return n_final_ == choices_.size(); }

  std::shared_ptr<http_session> session_;
  engine& engine_;
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
