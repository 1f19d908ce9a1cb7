#pragma once
// A chat completion's output as the client sees it: reasoning split off first (reasoning_parser),
// then tool calls found in what remains (tool_call_parser); the rest is content. Streaming-safe as
// both parts are: any split of the output gives the same result.
#include <string>
#include <string_view>
#include <vector>

#include "chat/reasoning_parser.hpp"
#include "chat/tool_call_parser.hpp"

namespace pagedserve {

struct chat_output_delta {
  std::string content;
  std::string reasoning;
  std::vector<parsed_tool_call> calls;
};

class chat_output_parser {
 public:
  // tools: the family whose calls to look for; none when the request offered no tools.
  chat_output_parser(reasoning_syntax reasoning, bool prompt_opened_reasoning, tool_call_family tools)
      : reasoning_(reasoning, prompt_opened_reasoning), tools_(tools) {}
  chat_output_delta push(std::string_view text);
  chat_output_delta finish();

 private:
  reasoning_parser reasoning_;
  tool_call_parser tools_;
};

}  // namespace pagedserve
