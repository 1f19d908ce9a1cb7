#include "chat/tool_call_parser.hpp"

#include <simdjson.h>

#include <algorithm>

namespace pagedserve {
namespace {

constexpr std::string_view hermes_open = "<tool_call>", hermes_close = "</tool_call>";
constexpr std::string_view mistral_open = "[TOOL_CALLS]";
constexpr std::string_view python_tag = "<|python_tag|>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// The length of the longest tail of text that is a proper prefix of marker: it may still become one.
std::size_t partial_marker_tail(std::string_view text, std::string_view marker) {
  for (std::size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

std::optional<parsed_tool_call> call_from(simdjson::dom::element e) {
  simdjson::dom::object obj;
  std::string_view name;
  if (e.get_object().get(obj) != simdjson::SUCCESS || obj["name"].get_string().get(name) != simdjson::SUCCESS ||
      name.empty())
    return std::nullopt;
  simdjson::dom::element args;
  if (obj["arguments"].get(args) != simdjson::SUCCESS && obj["parameters"].get(args) != simdjson::SUCCESS)
    return parsed_tool_call{std::string(name), "{}"};
  // Some models write the arguments as a JSON string holding the object.
  std::string_view text;
  if (args.get_string().get(text) == simdjson::SUCCESS) {
    simdjson::dom::parser inner;
    simdjson::dom::element parsed;
    if (inner.parse(simdjson::padded_string(text)).get(parsed) != simdjson::SUCCESS || !parsed.is_object())
      return std::nullopt;
    return parsed_tool_call{std::string(name), simdjson::minify(parsed)};
  }
  if (!args.is_object()) return std::nullopt;
  return parsed_tool_call{std::string(name), simdjson::minify(args)};
}

// A whole run of calls: one object, an array of them, or objects separated by ';' or spaces.
std::optional<std::vector<parsed_tool_call>> calls_parse(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  std::vector<parsed_tool_call> calls;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(simdjson::padded_string(text)).get(root) == simdjson::SUCCESS) {
    if (root.is_array()) {
      for (simdjson::dom::element item : root.get_array()) {
        auto call = call_from(item);
        if (!call) return std::nullopt;
        calls.push_back(std::move(*call));
      }
      if (calls.empty()) return std::nullopt;
      return calls;
    }
    auto call = call_from(root);
    if (!call) return std::nullopt;
    return std::vector{std::move(*call)};
  }
  // Several objects in a row: split at the top level, outside strings.
  std::size_t start = 0;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{') ++depth;
    else if (c == '}' && --depth == 0) {
      auto call = tool_call_parse_object(text.substr(start, i + 1 - start));
      if (!call) return std::nullopt;
      calls.push_back(std::move(*call));
      start = i + 1;
      while (start < text.size() && (is_space(text[start]) || text[start] == ';')) ++start;
      i = start - 1;
    } else if (depth == 0) {
      return std::nullopt;  // text between objects
    }
  }
  if (start != text.size() || calls.empty()) return std::nullopt;
  return calls;
}

}  // namespace

std::optional<parsed_tool_call> tool_call_parse_object(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(simdjson::padded_string(trim(json))).get(root) != simdjson::SUCCESS) return std::nullopt;
  return call_from(root);
}

void tool_call_parser::emit_content(tool_parse_output& out, std::string_view text) {
  // Whitespace waits: before a call and after the last one it is no content.
  const std::size_t end = text.find_last_not_of(" \n\t\r");
  if (end == std::string_view::npos) {
    held_space_ += text;
    return;
  }
  out.content += held_space_;
  out.content += text.substr(0, end + 1);
  held_space_ = std::string(text.substr(end + 1));
}

void tool_call_parser::push_hermes(tool_parse_output& out) {
  for (;;) {
    if (!inside_) {
      const std::size_t at = pending_.find(hermes_open);
      if (at == std::string::npos) {
        const std::size_t keep = partial_marker_tail(pending_, hermes_open);
        emit_content(out, std::string_view(pending_).substr(0, pending_.size() - keep));
        pending_.erase(0, pending_.size() - keep);
        return;
      }
      emit_content(out, std::string_view(pending_).substr(0, at));
      pending_.erase(0, at + hermes_open.size());
      inside_ = true;
    }
    const std::size_t end = pending_.find(hermes_close);
    if (end == std::string::npos) return;
    const std::string_view body = std::string_view(pending_).substr(0, end);
    if (auto call = tool_call_parse_object(body)) {
      out.calls.push_back(std::move(*call));
      ++n_calls_;
      held_space_.clear();  // the spaces before a call are no content
    } else {
      emit_content(out, std::string(hermes_open) + std::string(body) + std::string(hermes_close));
    }
    pending_.erase(0, end + hermes_close.size());
    inside_ = false;
  }
}

void tool_call_parser::push_to_end_marker(tool_parse_output& out, std::string_view marker) {
  if (inside_) return;  // everything after the marker waits for the end
  const std::size_t at = pending_.find(marker);
  if (at == std::string::npos) {
    const std::size_t keep = partial_marker_tail(pending_, marker);
    emit_content(out, std::string_view(pending_).substr(0, pending_.size() - keep));
    pending_.erase(0, pending_.size() - keep);
    return;
  }
  emit_content(out, std::string_view(pending_).substr(0, at));
  pending_.erase(0, at + marker.size());
  inside_ = true;
}

void tool_call_parser::push_llama3(tool_parse_output& out) {
  if (!decided_) {
    const std::size_t first = pending_.find_first_not_of(" \n\t\r");
    if (first == std::string::npos) return;
    const std::string_view rest = std::string_view(pending_).substr(first);
    // A call is the whole output: it starts with '{' or the python tag.
    if (rest.size() < python_tag.size() && python_tag.starts_with(rest)) return;
    decided_ = true;
    inside_ = rest.starts_with('{') || rest.starts_with(python_tag);
  }
  if (inside_) return;
  emit_content(out, pending_);
  pending_.clear();
}

tool_parse_output tool_call_parser::push(std::string_view text) {
  tool_parse_output out;
  if (family_ == tool_call_family::none) {
    out.content = text;
    return out;
  }
  pending_ += text;
  switch (family_) {
    case tool_call_family::hermes: push_hermes(out); break;
    case tool_call_family::mistral: push_to_end_marker(out, mistral_open); break;
    case tool_call_family::llama3_json: push_llama3(out); break;
    case tool_call_family::none: break;
  }
  return out;
}

tool_parse_output tool_call_parser::finish() {
  tool_parse_output out;
  if (inside_) {
    std::string_view body = pending_;
    if (family_ == tool_call_family::llama3_json) {
      body = trim(body);
      if (body.starts_with(python_tag)) body.remove_prefix(python_tag.size());
    }
    if (family_ == tool_call_family::hermes) {
      if (auto call = tool_call_parse_object(body)) out.calls.push_back(std::move(*call));  // cut off before its closer
    } else if (auto calls = calls_parse(body)) {
      out.calls = std::move(*calls);
    }
    if (!out.calls.empty()) {
      n_calls_ += static_cast<int>(out.calls.size());
    } else {
      const std::string_view opener = family_ == tool_call_family::hermes    ? hermes_open
                                      : family_ == tool_call_family::mistral ? mistral_open
                                                                             : std::string_view();
      emit_content(out, std::string(opener) + pending_);
    }
  } else {
    emit_content(out, pending_);
  }
  pending_.clear();
  inside_ = false;
  if (n_calls_ == 0) out.content += held_space_;
  held_space_.clear();
  return out;
}

}  // namespace pagedserve
