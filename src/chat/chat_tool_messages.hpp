#pragma once
// The parts of an OpenAI chat request a template sees beyond role and content, converted the way
// vLLM and transformers hand them to apply_chat_template: an assistant message's tool_calls with each
// function.arguments parsed from its JSON string into an object (templates write it with tojson),
// and the template variables of the request (tools, chat_template_kwargs, reasoning_effort).
#include <expected>
#include <string>
#include <string_view>

#include "chat/chat_template.hpp"

namespace pagedserve {

// tool_calls_json: OpenAI's [{"id","type":"function","function":{"name","arguments":"<json>"}}].
// Arguments that are not valid JSON stay strings (templates print strings as they are).
std::expected<chat_value, std::string> chat_tool_calls_value(std::string_view tool_calls_json);

// tools_json: the "tools" array, empty when the template must not see tools; kwargs_json: the
// chat_template_kwargs object, empty when none; reasoning_effort: empty when none. The kwargs come
// last, so they may set any variable (enable_thinking, tools, ...), as in vLLM.
std::expected<chat_value::object, std::string> chat_request_variables(std::string_view tools_json,
                                                                      std::string_view kwargs_json,
                                                                      std::string_view reasoning_effort);

}  // namespace pagedserve
