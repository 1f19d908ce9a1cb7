#pragma once
// The constraint that forces a tool call (tool_choice "required" or a named function): the JSON
// schema of one call object in the family's shape ({"name": <an allowed tool>, "arguments" or
// "parameters": <that tool's parameters schema>}), and the literal text the family writes around it.
// The request actor puts it in sampling_params::format for the constrained decoder.
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "chat/tool_call_family.hpp"

namespace pagedserve {

struct tool_call_constraint {
  std::string schema;  // JSON Schema text
  std::string prefix;  // e.g. "<tool_call>\n"
  std::string suffix;  // e.g. "\n</tool_call>"
};

// tools_json: the request's "tools" array (OpenAI's [{"type":"function","function":{name,
// parameters}}]); name: the one function allowed, or nothing for any of them. Errors say why no call
// can be forced (no tool-call format, an unknown name, no tools).
std::expected<tool_call_constraint, std::string> tool_call_constraint_build(tool_call_family family,
                                                                           std::string_view tools_json,
                                                                           std::optional<std::string_view> name);

}  // namespace pagedserve
