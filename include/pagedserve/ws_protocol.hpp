#pragma once
// The WebSocket wire protocol of DESIGN.md: client frames parsed and validated (simdjson), server
// frames encoded. Pure functions: no sockets here, so every bad input is unit-testable.
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "actors/client_link.hpp"
#include "pagedserve/ids.hpp"
#include "pagedserve/request.hpp"
#include "pagedserve/sampling.hpp"

namespace pagedserve {

struct chat_message {
  std::string role;
  std::string content;
};

// {"type":"generate","id":...,"prompt":...|"messages":[...],"params":{...}}
struct generate_command {
  std::string id;
  std::optional<std::string> prompt;
  std::optional<std::vector<token_id>> prompt_ids;  // a pre-tokenized prompt, used as is (no BOS added)
  std::vector<chat_message> messages;
  sampling_params params;      // max_tokens 0 when the client gave none (filled from the context left)
  std::optional<sample_group> group;  // one of n samples of the prompt (OpenAI n > 1)
};
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
client_frame parse_client_frame(std::string_view text, const sampling_params& defaults = {});

// Server frames.
std::string encode_token_frame(std::string_view id, const token_event& event);
std::string encode_done_frame(std::string_view id, finish_reason reason, const usage& used, const request_timings& t);
std::string encode_error_frame(const std::optional<std::string>& id, std::string_view code, std::string_view message);

// Appends s to out as a JSON string literal (quotes included). s must be valid UTF-8.
void json_append_string(std::string& out, std::string_view s);
// Appends v as a JSON number, the shortest text that reads back as the float. JSON has no NaN or
// infinities: -inf (a logprob of a token the sampler ruled out) becomes -9999.0, which the OpenAI
// SDKs read as "never", and NaN or +inf become 0. Every encoder (WebSocket and OpenAI) writes floats here.
void json_append_number(std::string& out, float v);

}  // namespace pagedserve
