#pragma once
// What a client hears of its generation: new tokens, then exactly one final event. Vocabulary shared
// by the request actors that send them and the encoders (WebSocket, OpenAI/SSE) that write them.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pagedserve/engine_error.hpp"
#include "pagedserve/ids.hpp"
#include "pagedserve/request.hpp"
#include "pagedserve/sampling.hpp"

namespace pagedserve {

// A tool call the model made (parsed from its output by its template's format).
struct tool_call {
  int index = 0;          // its position among the choice's calls
  std::string id;         // "call_..."
  std::string name;
  std::string arguments;  // JSON text of the arguments object
};

// New output of a request: text that is complete UTF-8, and the ids it came from. For a chat with a
// reasoning or tool-call format, text is the answer's content only; reasoning and completed calls
// come apart.
struct token_event {
  std::string text;
  std::vector<token_id> ids;
  std::vector<token_logprobs> logprobs;  // one per id when the request asked for logprobs, else empty
  std::string reasoning;                 // new reasoning text (<think>...</think>)
  std::vector<tool_call> tool_calls;     // calls completed by this output
};

// Request timings, as the client should see them (milliseconds; tokens per second).
struct request_timings {
  double time_to_first_token_ms = 0;  // accepted -> first token sampled
  double total_ms = 0;                // accepted -> finished
  double tokens_per_second = 0;       // generated tokens after the first, per second
};

// The one final event of a request: finished (reason) or failed (error).
struct final_event {
  std::optional<finish_reason> reason;  // none: failed
  usage used;
  request_timings timings;
  engine_failure error;  // failed only
  std::string reasoning;               // finished: the whole reasoning text, if any
  std::vector<tool_call> tool_calls;   // finished: every call, in order
};

// The finish reason a client sees: a stop that ended with tool calls is "tool_calls" (OpenAI).
inline std::string_view client_finish_reason(const final_event& e) {
  if (e.reason == finish_reason::stop && !e.tool_calls.empty()) return "tool_calls";
  return finish_reason_name(e.reason.value_or(finish_reason::error));
}

}  // namespace pagedserve
