#pragma once
// The WebSocket wire protocol of DESIGN.md: client frames parsed and validated (simdjson), server
// frames encoded. Pure functions: no sockets here, so every bad input is unit-testable.
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "pagedserve/generate_command.hpp"
#include "pagedserve/generation_events.hpp"
#include "pagedserve/ids.hpp"
#include "api/json_writer.hpp"  // json_append_string, for callers writing client frames
#include "pagedserve/request.hpp"
#include "pagedserve/sampling.hpp"

namespace pagedserve {

// {"type":"generate","id":...,"prompt":...|"messages":[...],"params":{...}} is a generate_command;
// a chat one may add tools, tool_choice, parallel_tool_calls, chat_template_kwargs, reasoning_effort
// as the OpenAI API takes them. Unknown fields of a generate frame (and of its params) are ignored and
// listed in ignored_fields ("params.<name>" for params), as the OpenAI endpoints do.
// {"type":"cancel","id":...}
struct cancel_command {
  std::string id;
};
// A frame that could not be accepted; id when the frame carried a readable one.
struct protocol_error {
  std::optional<std::string> id;
  std::string code;  // stable, machine-readable
  std::string message;
};

using client_frame = std::variant<generate_command, cancel_command, protocol_error>;

// defaults: what a generate command's params start from (the model's generation_config.json).
// max_logprobs: the most alternatives per token params.logprobs may ask for.
client_frame parse_client_frame(std::string_view text, const sampling_params& defaults = {}, int max_logprobs = 20);

// Server frames. A token frame carries new content in "text" and new reasoning in "reasoning" (one or
// both); a tool_call frame one completed call; the done frame the whole reasoning, every call, and
// the request's fields that were ignored.
std::string encode_token_frame(std::string_view id, const token_event& event);
std::string encode_tool_call_frame(std::string_view id, const tool_call& call);
std::string encode_done_frame(std::string_view id, const final_event& e,
                              const std::vector<std::string>& ignored_fields = {});
std::string encode_error_frame(const std::optional<std::string>& id, std::string_view code, std::string_view message);
// A request the engine ended with an error: its code from engine_error_table.
std::string encode_error_frame(std::string_view id, const engine_failure& e);

}  // namespace pagedserve
