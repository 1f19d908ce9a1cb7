#pragma once
// Why the engine ended a request with an error, as a type: request actors and the scheduler end
// requests with one, and the network edge turns it into a WebSocket error frame or an HTTP status
// with an OpenAI error object through the one table below (never by comparing strings).
#include <array>
#include <string>
#include <string_view>

namespace pagedserve {

enum class engine_error {
  invalid_request,          // the prompt cannot be used (bad token ids, empty, chat template failed)
  context_length_exceeded,  // the prompt does not fit the context
  invalid_max_tokens,       // max_tokens exceeds what the context has left after the prompt
  queue_full,               // the waiting queue is full
  too_many_requests,        // this client has too many requests waiting
  shutting_down,            // the server is draining
  request_timeout,          // ran longer than the server's request timeout
  client_too_slow,          // the client did not read its tokens
};

// An error and its message for people.
struct engine_failure {
  engine_error code = engine_error::invalid_request;
  std::string message;
};

// How each error is shown to clients: its stable code (WebSocket "code", OpenAI "code", metrics
// label), and the HTTP status, OpenAI error type and offending parameter of the OpenAI API.
struct engine_error_wire {
  engine_error error;
  std::string_view code;
  int http_status;
  std::string_view openai_type;
  std::string_view param;  // empty: null
};

inline constexpr std::array<engine_error_wire, 8> engine_error_table{{
    {engine_error::invalid_request, "invalid_request", 400, "invalid_request_error", "prompt"},
    {engine_error::context_length_exceeded, "context_length_exceeded", 400, "invalid_request_error", ""},
    {engine_error::invalid_max_tokens, "invalid_max_tokens", 400, "invalid_request_error", "max_tokens"},
    {engine_error::queue_full, "queue_full", 429, "rate_limit_error", ""},
    {engine_error::too_many_requests, "too_many_requests", 429, "rate_limit_error", ""},
    {engine_error::shutting_down, "shutting_down", 503, "server_error", ""},
    {engine_error::request_timeout, "request_timeout", 504, "server_error", ""},
    {engine_error::client_too_slow, "client_too_slow", 500, "server_error", ""},
}};

// The table's row for e (rows are in enum order: checked at compile time).
constexpr const engine_error_wire& engine_error_info(engine_error e) {
  return engine_error_table[static_cast<std::size_t>(e)];
}
constexpr std::string_view engine_error_code(engine_error e) { return engine_error_info(e).code; }

static_assert([] {
  for (std::size_t i = 0; i < engine_error_table.size(); ++i)
    if (static_cast<std::size_t>(engine_error_table[i].error) != i) return false;
  return true;
}());

}  // namespace pagedserve
