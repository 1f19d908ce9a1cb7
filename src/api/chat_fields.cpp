#include "api/chat_fields.hpp"

namespace pagedserve::api {
namespace {

constexpr std::size_t max_tools = 128;

// [{"type":"function","function":{"name": non-empty string, "description"?: string, "parameters"?: object}}]
maybe_field_error read_tools(element value, std::string& json_out) {
  if (value.type() != element_type::ARRAY) return wrong_type("tools", "an array of tools");
  simdjson::dom::array tools(value);
  if (tools.size() > max_tools) return bad_value("tools", "at most " + std::to_string(max_tools) + " tools");
  for (element tool : tools) {
    std::string_view type, name;
    element function, parameters;
    if (tool.type() != element_type::OBJECT || tool["type"].get(type) != simdjson::SUCCESS || type != "function")
      return bad_value("tools", "every tool must be {\"type\": \"function\", \"function\": {...}}");
    if (tool["function"].get(function) != simdjson::SUCCESS || function.type() != element_type::OBJECT)
      return wrong_type("tools[].function", "an object");
    if (function["name"].get(name) != simdjson::SUCCESS || name.empty())
      return bad_value("tools[].function.name", "every function needs a non-empty 'name'");
    if (function["parameters"].get(parameters) == simdjson::SUCCESS && parameters.type() != element_type::OBJECT &&
        !is_null(parameters))
      return wrong_type("tools[].function.parameters", "a JSON Schema object");
  }
  json_out = simdjson::minify(value);
  return std::nullopt;
}

// "auto" | "none" | "required" | {"type":"function","function":{"name":...}}
maybe_field_error read_tool_choice(element value, chat_options& o) {
  if (value.type() == element_type::STRING) {
    const std::string_view s(value);
    if (s == "auto") o.tool_choice = tool_choice_mode::automatic;
    else if (s == "none") o.tool_choice = tool_choice_mode::none;
    else if (s == "required") o.tool_choice = tool_choice_mode::required;
    else return bad_value("tool_choice", "tool_choice must be auto, none, required or a named function");
    return std::nullopt;
  }
  std::string_view name;
  if (value.type() != element_type::OBJECT || value["function"]["name"].get(name) != simdjson::SUCCESS || name.empty())
    return wrong_type("tool_choice", "\"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
  o.tool_choice = tool_choice_mode::named;
  o.tool_choice_name = std::string(name);
  return std::nullopt;
}

}  // namespace

bool read_chat_option(std::string_view key, element value, chat_options& o, maybe_field_error& err) {
  if (key == "tools") {
    err = read_tools(value, o.tools_json);
  } else if (key == "tool_choice") {
    err = read_tool_choice(value, o);
  } else if (key == "parallel_tool_calls") {
    err = read_bool(value, key, o.parallel_tool_calls);
  } else if (key == "chat_template_kwargs") {
    if (value.type() != element_type::OBJECT) err = wrong_type(key, "an object");
    else o.template_kwargs_json = simdjson::minify(value);
  } else if (key == "reasoning_effort") {
    err = read_string(value, key, o.reasoning_effort);
  } else if (key == "functions" || key == "function_call") {
    err = bad_value(key, "'" + std::string(key) + "' is deprecated and not supported: use 'tools' and 'tool_choice'");
  } else {
    return false;
  }
  return true;
}

maybe_field_error check_chat_options(const chat_options& o) {
  if (o.tool_choice == tool_choice_mode::required && o.tools_json.empty())
    return bad_value("tool_choice", "tool_choice 'required' needs 'tools'");
  if (o.tool_choice == tool_choice_mode::named) {
    simdjson::dom::parser parser;
    simdjson::dom::array tools;
    if (o.tools_json.empty() || parser.parse(o.tools_json).get_array().get(tools) != simdjson::SUCCESS)
      return bad_value("tool_choice", "tool_choice names a function but 'tools' is empty");
    for (element tool : tools) {
      std::string_view name;
      if (tool["function"]["name"].get(name) == simdjson::SUCCESS && name == o.tool_choice_name) return std::nullopt;
    }
    return bad_value("tool_choice", "tool_choice names '" + o.tool_choice_name + "', which is not in 'tools'");
  }
  return std::nullopt;
}

maybe_field_error read_message_tool_calls(element value, std::string& json_out) {
  if (value.type() != element_type::ARRAY) return wrong_type("messages[].tool_calls", "an array of tool calls");
  for (element call : simdjson::dom::array(value)) {
    std::string_view name;
    element arguments;
    if (call.type() != element_type::OBJECT || call["function"]["name"].get(name) != simdjson::SUCCESS)
      return bad_value("messages[].tool_calls", "every tool call needs function.name");
    if (call["function"]["arguments"].get(arguments) == simdjson::SUCCESS &&
        arguments.type() != element_type::STRING && arguments.type() != element_type::OBJECT)
      return wrong_type("messages[].tool_calls[].function.arguments", "a JSON string or an object");
  }
  json_out = simdjson::minify(value);
  return std::nullopt;
}

}  // namespace pagedserve::api
