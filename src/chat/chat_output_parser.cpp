#include "chat/chat_output_parser.hpp"

namespace pagedserve {
namespace {

void append(chat_output_delta& out, tool_parse_output t) {
  out.content += t.content;
  for (parsed_tool_call& c : t.calls) out.calls.push_back(std::move(c));
}

}  // namespace

chat_output_delta chat_output_parser::push(std::string_view text) {
  reasoning_split r = reasoning_.push(text);
  chat_output_delta out;
  out.reasoning = std::move(r.reasoning);
  if (!r.content.empty()) append(out, tools_.push(r.content));
  return out;
}

chat_output_delta chat_output_parser::finish() {
  reasoning_split r = reasoning_.finish();
  chat_output_delta out;
  out.reasoning = std::move(r.reasoning);
  if (!r.content.empty()) append(out, tools_.push(r.content));
  append(out, tools_.finish());
  return out;
}

}  // namespace pagedserve
