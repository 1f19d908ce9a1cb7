#pragma once
// RequestActor: one per generate request. Validates it against the model (prompt and max_tokens
// within the context), tokenizes, submits it to the scheduler, then turns the sampled ids into text
// (UTF-8 safe, stop strings) and events for its client_link. Ends with exactly one final event.
//
// Mailbox: start_generation, cancel_generation (the connection); prompt_prepared (itself, from the
//          engine's prompt thread); tokens_generated, request_finished, request_rejected, request_failed
//          (the scheduler).
// With a timeout, a request still running that long after start_generation is ended with error
// request_timeout (its own timer on its strand; the scheduler ends it at the next step boundary).
// Sends: submit_request / finish_request to the scheduler; token and final events to its client_link.
// Built by engine::submit; its connection holds it as a generation_handle (cancel).
#include <spdlog/logger.h>

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "pagedserve/client_link.hpp"
#include "actors/engine.hpp"
#include "actors/messages.hpp"
#include "pagedserve/engine_api.hpp"
#include "pagedserve/generate_command.hpp"
#include "chat/chat_output_parser.hpp"
#include "pagedserve/generation_events.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagedserve {

class request_actor : public actor<request_actor, request_mailbox>,
                      public generation_handle,
                      public std::enable_shared_from_this<request_actor> {
 public:
  request_actor(const boost::asio::any_io_executor& ex, engine& e, std::shared_ptr<client_link> link,
                generate_command command, std::chrono::seconds timeout = std::chrono::seconds(0));

  // generation_handle: tells itself cancel_generation.
  void cancel(std::optional<engine_failure> why) override { tell(cancel_generation{std::move(why)}); }

  void on(start_generation);
  void on(prompt_prepared m);
  void on(cancel_generation);
  void on(tokens_generated m);
  void on(request_finished m);
  void on(request_rejected m);
  void on(request_failed m);

 private:
  // The prompt's token ids: given, tokenized, or the chat template's rendering of the messages.
  std::expected<std::vector<token_id>, std::string> render_prompt() const;
  // The one final event: done with `reason`, or an error.
  void finish(finish_reason reason, usage used);
  void fail(engine_error code, std::string message, usage used = {});
  // Ending before the submit: tells the scheduler, which holds the group's first sample until all came.
  void withdraw_from_group();
  void arm_timeout();
  // Applies stop strings to new text; returns what may be sent now.
  std::string release_text(std::string fresh);
  // Chat: sets up the output's reasoning and tool-call parsing, and a forced call's format; the
  // reason the request cannot be served as asked, if any.
  std::optional<std::string> prepare_output(const std::vector<token_id>& prompt);
  // Released text as the client sees it: content, reasoning and completed calls (last: the end).
  token_event parse_output(std::string text, bool last);

  using clock = std::chrono::steady_clock;
  engine& engine_;
  std::shared_ptr<client_link> link_;
  generate_command command_;
  request_id id_{};
  std::optional<incremental_detokenizer> detokenizer_;  // made once the prompt's last token is known
  std::string held_;  // text that may be the start of a stop string
  std::optional<chat_output_parser> output_;  // chat with reasoning or tool calls to tell apart
  std::string reasoning_;                     // all reasoning so far (the final event's)
  std::vector<tool_call> calls_;              // all calls so far
  bool submitted_ = false, stop_matched_ = false, ended_ = false;
  int n_generated_ = 0;
  int n_prompt_ = 0;
  clock::time_point accepted_at_ = clock::now(), first_token_at_{}, last_tokens_at_{};
  std::chrono::seconds timeout_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace pagedserve
