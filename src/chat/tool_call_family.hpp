#pragma once
// Which tool-call format a model writes, told from its chat template's text (never from its name):
// the template that renders tool calls in a conversation teaches the model to write them that way.
#include <string_view>

namespace pagedserve {

enum class tool_call_family {
  none,         // the template renders no tool calls: output is never parsed for them
  hermes,       // Qwen3, Qwen2.5, Hermes: <tool_call>\n{"name":..,"arguments":{..}}\n</tool_call>, one per call
  llama3_json,  // Llama 3.1+: {"name":..,"parameters":{..}}, optionally after <|python_tag|>
  mistral,      // Mistral: [TOOL_CALLS][{"name":..,"arguments":{..}}, ...]
};

tool_call_family tool_call_family_detect(std::string_view template_source);
std::string_view tool_call_family_name(tool_call_family f);

// The literal text around one call object (the constrained decoder's prefix and suffix when a call is
// forced), and the key its arguments sit under.
struct tool_call_markers {
  std::string_view opener;
  std::string_view closer;
  std::string_view arguments_key;
};
tool_call_markers tool_call_markers_of(tool_call_family f);

}  // namespace pagedserve
