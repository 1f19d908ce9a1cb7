// The markers each family's template writes are distinctive enough that one substring decides it; the
// order matters only for templates that mention several (none known), most specific first.
#include "chat/tool_call_family.hpp"

namespace pagedserve {

tool_call_family tool_call_family_detect(std::string_view source) {
  if (source.find("[TOOL_CALLS]") != std::string_view::npos) return tool_call_family::mistral;
  if (source.find("<tool_call>") != std::string_view::npos) return tool_call_family::hermes;
  // Llama 3.1+ templates: tool results go in the "ipython" role and calls are JSON with "parameters".
  const bool ipython = source.find("ipython") != std::string_view::npos;
  const bool parameters = source.find("\"parameters\"") != std::string_view::npos ||
                          source.find("<|python_tag|>") != std::string_view::npos;
  if (ipython && parameters) return tool_call_family::llama3_json;
  return tool_call_family::none;
}

std::string_view tool_call_family_name(tool_call_family f) {
  switch (f) {
    case tool_call_family::none: return "none";
    case tool_call_family::hermes: return "hermes";
    case tool_call_family::llama3_json: return "llama3_json";
    case tool_call_family::mistral: return "mistral";
  }
  return "none";
}

tool_call_markers tool_call_markers_of(tool_call_family f) {
  switch (f) {
    case tool_call_family::hermes: return {"<tool_call>\n", "\n</tool_call>", "arguments"};
    case tool_call_family::llama3_json: return {"", "", "parameters"};
    case tool_call_family::mistral: return {"[TOOL_CALLS][", "]", "arguments"};
    case tool_call_family::none: break;
  }
  return {"", "", "arguments"};
}

}  // namespace pagedserve
