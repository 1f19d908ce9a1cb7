#pragma once
// Finds the tool calls in a model's output as it streams, in the format of its template's family
// (tool_call_family), and passes the text around them through as content. Fed any split of the
// output, it gives the same calls and content as when fed the whole at once: text that may be the
// start of a call marker is held back until the next piece decides it.
//
// A call is reported once complete: hermes at its </tool_call>; llama3_json and mistral, whose calls
// run to the end of the output, at finish(). Text that looks like a call but does not parse as one
// ({"name": string, "arguments"/"parameters": object}) is content, markers included.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_call_family.hpp"

namespace pagedserve {

struct parsed_tool_call {
  std::string name;
  std::string arguments;  // JSON text of the arguments object, compact
};

struct tool_parse_output {
  std::string content;
  std::vector<parsed_tool_call> calls;
};

class tool_call_parser {
 public:
  explicit tool_call_parser(tool_call_family family) : family_(family) {}
  tool_parse_output push(std::string_view text);
  // The end of the output: what was held back, and any call that runs to the end.
  tool_parse_output finish();

 private:
  void push_hermes(tool_parse_output& out);
  void push_to_end_marker(tool_parse_output& out, std::string_view marker);  // mistral
  void push_llama3(tool_parse_output& out);
  void emit_content(tool_parse_output& out, std::string_view text);

  tool_call_family family_;
  std::string pending_;     // text not yet decided
  std::string held_space_;  // whitespace not yet emitted: dropped before a call and after the last one
  bool inside_ = false;     // after a call opener (hermes: until its closer; others: to the end)
  bool decided_ = false;    // llama3_json: the output's first non-space text has been seen
  int n_calls_ = 0;
};

// One call object's JSON text ({"name": ..., "arguments" or "parameters": {...}}) parsed, or nothing.
std::optional<parsed_tool_call> tool_call_parse_object(std::string_view json);

}  // namespace pagedserve
