#pragma once
// A generation as the engine takes it, whatever protocol asked for it: the WebSocket protocol and
// the OpenAI API both parse their requests into these.
#include <optional>
#include <string>
#include <vector>

#include "pagedserve/ids.hpp"
#include "pagedserve/request.hpp"
#include "pagedserve/sampling.hpp"

namespace pagedserve {

struct chat_message {
  std::string role;
  std::string content;            // a null content (an assistant turn of tool calls only) is ""
  std::string tool_calls_json;    // assistant: OpenAI's tool_calls array as JSON text; empty: none
  std::string tool_call_id;       // tool: the call this message answers
  std::string name;               // the optional "name" field (a tool's name on tool messages)
  std::string reasoning_content;  // assistant: an earlier turn's reasoning, sent back
};

// OpenAI's tool_choice: auto (the model decides), none (no tools shown or parsed), required (a call
// is forced), named (a call of that function is forced).
enum class tool_choice_mode { automatic, none, required, named };

// The chat request's tools and what the template sees beyond its messages.
struct chat_options {
  std::string tools_json;  // the request's "tools" array as JSON text; empty: none
  tool_choice_mode tool_choice = tool_choice_mode::automatic;
  std::string tool_choice_name;       // named: the function
  bool parallel_tool_calls = true;    // false: only the first call is reported
  std::string template_kwargs_json;   // chat_template_kwargs as JSON text (an object); empty: none
  std::string reasoning_effort;       // passed to the template; empty: none
};

struct generate_command {
  std::string id;  // the client's name for it (logs; the WebSocket protocol's "id")
  std::optional<std::string> prompt;
  std::optional<std::vector<token_id>> prompt_ids;  // a pre-tokenized prompt, used as is (no BOS added)
  std::vector<chat_message> messages;
  chat_options chat;           // with messages only
  sampling_params params;      // max_tokens 0 when the client gave none (filled from the context left)
  std::optional<sample_group> group;  // one of n samples of the prompt (OpenAI n > 1)
  std::vector<std::string> ignored_fields;  // fields of the request this server does not know (reported back)
};

}  // namespace pagedserve
