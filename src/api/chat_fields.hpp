#pragma once
// The chat request's fields about tools and the template, read the same way by the OpenAI API and
// the WebSocket protocol: tools, tool_choice, parallel_tool_calls, chat_template_kwargs,
// reasoning_effort; and a message's tool_calls. Kept as JSON text in chat_options: the request actor
// hands them to the model's template.
#include <string_view>

#include "api/request_fields.hpp"
#include "pagedserve/generate_command.hpp"

namespace pagedserve::api {

// False when key is none of the chat options; otherwise err is set if the value is bad.
bool read_chat_option(std::string_view key, element value, chat_options& o, maybe_field_error& err);
// Checks between options once all are read: a named tool_choice names one of the tools, required
// has tools to choose from.
maybe_field_error check_chat_options(const chat_options& o);
// An assistant message's tool_calls: [{"id","type":"function","function":{"name","arguments"}}],
// arguments a string (OpenAI) or an object; kept as JSON text.
maybe_field_error read_message_tool_calls(element value, std::string& json_out);

}  // namespace pagedserve::api
