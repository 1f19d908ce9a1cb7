#include "chat/chat_tool_messages.hpp"

#include <algorithm>

namespace pagedserve {
namespace {

chat_value* field(chat_value& obj, std::string_view key) {
  auto* fields = std::get_if<chat_value::object>(&obj.data);
  if (!fields) return nullptr;
  auto it = std::find_if(fields->begin(), fields->end(), [&](const auto& kv) { return kv.first == key; });
  return it == fields->end() ? nullptr : &it->second;
}

void set(chat_value::object& vars, std::string key, chat_value v) {
  auto it = std::find_if(vars.begin(), vars.end(), [&](const auto& kv) { return kv.first == key; });
  if (it != vars.end()) it->second = std::move(v);
  else vars.emplace_back(std::move(key), std::move(v));
}

}  // namespace

std::expected<chat_value, std::string> chat_tool_calls_value(std::string_view tool_calls_json) {
  auto calls = chat_value_parse_json(tool_calls_json);
  if (!calls) return std::unexpected("tool_calls: " + calls.error());
  auto* items = std::get_if<chat_value::array>(&calls->data);
  if (!items) return std::unexpected(std::string("tool_calls must be an array"));
  for (chat_value& call : *items) {
    chat_value* function = field(call, "function");
    chat_value* arguments = function ? field(*function, "arguments") : nullptr;
    const auto* text = arguments ? std::get_if<std::string>(&arguments->data) : nullptr;
    if (!text) continue;
    if (auto parsed = chat_value_parse_json(*text); parsed && std::holds_alternative<chat_value::object>(parsed->data))
      *arguments = std::move(*parsed);
  }
  return calls;
}

std::expected<chat_value::object, std::string> chat_request_variables(std::string_view tools_json,
                                                                      std::string_view kwargs_json,
                                                                      std::string_view reasoning_effort) {
  chat_value::object vars;
  if (!tools_json.empty()) {
    auto tools = chat_value_parse_json(tools_json);
    if (!tools) return std::unexpected("tools: " + tools.error());
    set(vars, "tools", std::move(*tools));
  }
  if (!reasoning_effort.empty()) set(vars, "reasoning_effort", std::string(reasoning_effort));
  if (!kwargs_json.empty()) {
    auto kwargs = chat_value_parse_json(kwargs_json);
    if (!kwargs) return std::unexpected("chat_template_kwargs: " + kwargs.error());
    auto* fields = std::get_if<chat_value::object>(&kwargs->data);
    if (!fields) return std::unexpected(std::string("chat_template_kwargs must be an object"));
    for (auto& [key, v] : *fields) set(vars, key, std::move(v));
  }
  return vars;
}

}  // namespace pagedserve
