#include "chat/tool_call_schema.hpp"

#include <simdjson.h>

#include <vector>

namespace pagedserve {
namespace {

// The schema of one tool's call object; quoted_name is the name as a JSON string.
std::string call_schema(std::string_view quoted_name, std::string_view parameters, std::string_view arguments_key) {
  return R"({"type":"object","properties":{"name":{"const":)" + std::string(quoted_name) + R"(},")" + std::string(arguments_key) +
         R"(":)" + std::string(parameters) + R"(},"required":["name",")" + std::string(arguments_key) +
         R"("],"additionalProperties":false})";
}

}  // namespace

std::expected<tool_call_constraint, std::string> tool_call_constraint_build(tool_call_family family,
                                                                           std::string_view tools_json,
                                                                           std::optional<std::string_view> name) {
  if (family == tool_call_family::none)
    return std::unexpected(std::string("the model's chat template defines no tool-call format to force"));
  simdjson::dom::parser parser;
  simdjson::dom::array tools;
  if (parser.parse(simdjson::padded_string(tools_json)).get_array().get(tools) != simdjson::SUCCESS)
    return std::unexpected(std::string("'tools' must be an array"));
  const tool_call_markers markers = tool_call_markers_of(family);
  std::vector<std::string> options;
  for (simdjson::dom::element tool : tools) {
    std::string_view tool_name;
    if (tool["function"]["name"].get_string().get(tool_name) != simdjson::SUCCESS) continue;
    if (name && *name != tool_name) continue;
    simdjson::dom::element parameters;
    const std::string params = tool["function"]["parameters"].get(parameters) == simdjson::SUCCESS
                                   ? simdjson::minify(parameters)
                                   : std::string(R"({"type":"object","properties":{}})");
    simdjson::dom::element quoted_name;
    if (tool["function"]["name"].get(quoted_name) != simdjson::SUCCESS) continue;  // a string: read above
    options.push_back(call_schema(simdjson::minify(quoted_name), params, markers.arguments_key));
  }
  if (options.empty())
    return std::unexpected(name ? "tool_choice names '" + std::string(*name) + "', which is not in 'tools'"
                                : std::string("tool_choice 'required' needs at least one tool"));
  tool_call_constraint out;
  out.prefix = markers.opener;
  out.suffix = markers.closer;
  if (options.size() == 1) {
    out.schema = std::move(options.front());
  } else {
    out.schema = R"({"anyOf":[)";
    for (std::size_t i = 0; i < options.size(); ++i) out.schema += (i ? "," : "") + options[i];
    out.schema += "]}";
  }
  return out;
}

}  // namespace pagedserve
