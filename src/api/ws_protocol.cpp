// Parses and validates client frames with simdjson's DOM API; encodes server frames by hand
// (they are small and fixed in shape).
#include "api/ws_protocol.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cmath>

#include "api/chat_fields.hpp"
#include "api/request_fields.hpp"
#include "pagedserve/utf8.hpp"

namespace pagedserve {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr std::size_t max_id_length = 256;
// Client text (a type, an unknown key) quoted in an error is cut to this many bytes: a 1 MiB key must
// not come back as a 1 MiB error frame.
constexpr std::size_t max_quoted_bytes = 64;

// 'text', clipped to max_quoted_bytes on a code point boundary ("..." marks a cut).
std::string quote_client_text(std::string_view text) {
  const std::string_view kept = utf8_prefix(text, max_quoted_bytes);
  return "'" + std::string(kept) + (kept.size() < text.size() ? "...'" : "'");
}

struct bad_frame {
  std::string code, message;
};

bad_frame wrong_type(std::string_view field, std::string_view expected) {
  return {"invalid_request", "field '" + std::string(field) + "' must be " + std::string(expected)};
}

// A bad parameter value: the wire protocol names an out-of-range max_tokens apart.
bad_frame from_field_error(api::field_error e) {
  const bool max_tokens = e.code == "invalid_value" && (e.param == "max_tokens" || e.param == "max_completion_tokens");
  return {max_tokens ? "invalid_max_tokens" : "invalid_request", std::move(e.message)};
}

std::optional<bad_frame> read_params(simdjson::dom::object params, sampling_params& p,
                                    std::vector<std::string>& ignored, int max_logprobs) {
  for (auto [key, value] : params) {
    api::maybe_field_error err;
    std::int64_t logprobs = 0;
    if (key == "logprobs") {  // WebSocket: how many alternatives per token (0 = the sampled one's only)
      err = api::read_integer(value, key, 0, max_logprobs, logprobs);
      p.logprobs = static_cast<int>(logprobs);
    } else if (!api::read_sampling_param(key, value, p, err)) {
      ignored.push_back("params." + std::string(key));
    }
    if (err) return from_field_error(std::move(*err));
  }
  return std::nullopt;
}

std::optional<bad_frame> read_messages(simdjson::dom::array messages, std::vector<chat_message>& out) {
  for (element m : messages) {
    if (m.type() != element_type::OBJECT) return wrong_type("messages", "an array of {role, content} objects");
    chat_message msg;
    for (auto [key, value] : simdjson::dom::object(m)) {
      if (key == "tool_calls") {
        if (auto err = api::read_message_tool_calls(value, msg.tool_calls_json)) return from_field_error(std::move(*err));
        continue;
      }
      if (value.type() != element_type::STRING)
        return bad_frame{"invalid_request", "field " + quote_client_text("messages[]." + std::string(key)) + " must be a string"};
      if (key == "role") msg.role = std::string_view(value);
      else if (key == "content") msg.content = std::string_view(value);
      else if (key == "tool_call_id") msg.tool_call_id = std::string_view(value);
      else if (key == "name") msg.name = std::string_view(value);
      else if (key == "reasoning_content") msg.reasoning_content = std::string_view(value);
      else return bad_frame{"unknown_field", "unknown field " + quote_client_text("messages[]." + std::string(key))};
    }
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool")
      return bad_frame{"invalid_request", "message role must be system, user, assistant or tool"};
    out.push_back(std::move(msg));
  }
  if (out.empty()) return bad_frame{"invalid_request", "'messages' must not be empty"};
  return std::nullopt;
}

}  // namespace

client_frame parse_client_frame(std::string_view text, const sampling_params& defaults, int max_logprobs) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  element root;
  if (parser.parse(padded).get(root) != simdjson::SUCCESS)
    return protocol_error{std::nullopt, "invalid_json", "frame is not valid JSON"};
  if (root.type() != element_type::OBJECT)
    return protocol_error{std::nullopt, "invalid_request", "frame must be a JSON object"};
  simdjson::dom::object obj(root);

  std::optional<std::string> id;
  element id_el;
  if (obj["id"].get(id_el) == simdjson::SUCCESS) {
    if (id_el.type() != element_type::STRING)
      return protocol_error{std::nullopt, "invalid_request", "field 'id' must be a string"};
    std::string_view v(id_el);
    if (v.empty() || v.size() > max_id_length)
      return protocol_error{std::nullopt, "invalid_request", "field 'id' must be 1 to 256 characters"};
    id = std::string(v);
  }
  auto fail = [&](bad_frame b) -> client_frame { return protocol_error{id, std::move(b.code), std::move(b.message)}; };

  element type_el;
  if (obj["type"].get(type_el) != simdjson::SUCCESS) return fail({"invalid_request", "missing field 'type'"});
  if (type_el.type() != element_type::STRING) return fail(wrong_type("type", "a string"));
  const std::string_view type(type_el);
  if (type != "generate" && type != "cancel")
    return fail({"unknown_type", "unknown type " + quote_client_text(type) + " (expected generate or cancel)"});
  if (!id) return fail({"invalid_request", "missing field 'id'"});

  if (type == "cancel") {
    for (auto [key, value] : obj)
      if (key != "type" && key != "id") return fail({"unknown_field", "unknown field " + quote_client_text(key)});
    return cancel_command{*id};
  }

  generate_command g;
  g.id = *id;
  g.params = defaults;  // max_tokens 0: as long as the context allows
  bool has_messages = false;
  for (auto [key, value] : obj) {
    if (key == "type" || key == "id") continue;
    std::optional<bad_frame> err;
    if (key == "prompt") {
      if (value.type() != element_type::STRING) err = wrong_type("prompt", "a string");
      else g.prompt = std::string(std::string_view(value));
    } else if (key == "messages") {
      if (value.type() != element_type::ARRAY) err = wrong_type("messages", "an array");
      else err = read_messages(simdjson::dom::array(value), g.messages);
      has_messages = true;
    } else if (key == "params") {
      if (value.type() != element_type::OBJECT) err = wrong_type("params", "an object");
      else err = read_params(simdjson::dom::object(value), g.params, g.ignored_fields, max_logprobs);
    } else {
      api::maybe_field_error field_err;
      if (!api::read_chat_option(key, value, g.chat, field_err)) g.ignored_fields.emplace_back(key);
      if (field_err) err = from_field_error(std::move(*field_err));
    }
    if (err) return fail(std::move(*err));
  }
  if (auto err = api::check_chat_options(g.chat)) return fail(from_field_error(std::move(*err)));
  if (g.prompt && has_messages) return fail({"invalid_request", "give either 'prompt' or 'messages', not both"});
  if (!g.prompt && !has_messages) return fail({"invalid_request", "missing field 'prompt' (or 'messages')"});
  return g;
}

std::string encode_token_frame(std::string_view id, const token_event& e) {
  std::string out = R"({"type":"token","id":)";
  json_append_string(out, id);
  if (!e.text.empty() || e.reasoning.empty()) {
    out += R"(,"text":)";
    json_append_string(out, e.text);
  }
  if (!e.reasoning.empty()) {
    out += R"(,"reasoning":)";
    json_append_string(out, e.reasoning);
  }
  out += R"(,"token_ids":[)";
  for (std::size_t i = 0; i < e.ids.size(); ++i) {
    if (i) out.push_back(',');
    out += std::to_string(e.ids[i]);
  }
  out += "]";
  if (!e.logprobs.empty()) {  // [{"logprob":x,"top":[[id,logprob],...]}, ...] parallel to token_ids
    out += R"(,"logprobs":[)";
    for (std::size_t i = 0; i < e.logprobs.size(); ++i) {
      if (i) out.push_back(',');
      out += R"({"logprob":)";
      json_append_number(out, e.logprobs[i].logprob);
      out += R"(,"top":[)";
      for (std::size_t k = 0; k < e.logprobs[i].top.size(); ++k) {
        if (k) out.push_back(',');
        out += "[" + std::to_string(e.logprobs[i].top[k].first) + ",";
        json_append_number(out, e.logprobs[i].top[k].second);
        out += "]";
      }
      out += "]}";
    }
    out += "]";
  }
  out += "}";
  return out;
}

namespace {

// {"id","type":"function","function":{"name","arguments"}}, as OpenAI writes a call.
void append_tool_call(std::string& out, const tool_call& call) {
  out += R"({"id":)";
  json_append_string(out, call.id);
  out += R"(,"type":"function","function":{"name":)";
  json_append_string(out, call.name);
  out += R"(,"arguments":)";
  json_append_string(out, call.arguments);
  out += "}}";
}

}  // namespace

std::string encode_tool_call_frame(std::string_view id, const tool_call& call) {
  std::string out = R"({"type":"tool_call","id":)";
  json_append_string(out, id);
  out += R"(,"index":)" + std::to_string(call.index) + R"(,"tool_call":)";
  append_tool_call(out, call);
  out += "}";
  return out;
}

std::string encode_done_frame(std::string_view id, const final_event& e, const std::vector<std::string>& ignored) {
  const usage& used = e.used;
  const request_timings& t = e.timings;
  std::string out = R"({"type":"done","id":)";
  json_append_string(out, id);
  out += R"(,"finish_reason":")" + std::string(client_finish_reason(e)) + '"';
  out += R"(,"usage":{"prompt_tokens":)" + std::to_string(used.prompt_tokens) +
         R"(,"completion_tokens":)" + std::to_string(used.completion_tokens) +
         R"(,"total_tokens":)" + std::to_string(used.prompt_tokens + used.completion_tokens) + "}";
  auto num = [](double v) { return std::isfinite(v) ? std::to_string(v) : std::string("0"); };
  out += R"(,"timings":{"ttft_ms":)" + num(t.time_to_first_token_ms) +
         R"(,"total_ms":)" + num(t.total_ms) + R"(,"tokens_per_second":)" + num(t.tokens_per_second);
  if (used.spec_draft_tokens > 0)
    out += R"(,"spec_draft_tokens":)" + std::to_string(used.spec_draft_tokens) + R"(,"spec_accepted_tokens":)" +
           std::to_string(used.spec_accepted_tokens);
  out += "}";
  if (!e.reasoning.empty()) {
    out += R"(,"reasoning":)";
    json_append_string(out, e.reasoning);
  }
  if (!e.tool_calls.empty()) {
    out += R"(,"tool_calls":[)";
    for (std::size_t i = 0; i < e.tool_calls.size(); ++i) {
      if (i) out += ',';
      append_tool_call(out, e.tool_calls[i]);
    }
    out += "]";
  }
  if (!ignored.empty()) {
    out += R"(,"ignored_fields":[)";
    constexpr std::size_t max_names = 16;  // a frame inventing many names gets a bounded answer
    for (std::size_t i = 0; i < std::min(ignored.size(), max_names); ++i) {
      if (i) out += ',';
      json_append_string(out, utf8_prefix(ignored[i], max_quoted_bytes));
    }
    out += "]";
  }
  out += "}";
  return out;
}

std::string encode_error_frame(const std::optional<std::string>& id, std::string_view code, std::string_view message) {
  std::string out = R"({"type":"error","id":)";
  if (id) json_append_string(out, *id);
  else out += "null";
  out += R"(,"code":)";
  json_append_string(out, code);
  out += R"(,"message":)";
  json_append_string(out, message);
  out += "}";
  return out;
}

std::string encode_error_frame(std::string_view id, const engine_failure& e) {
  return encode_error_frame(std::string(id), engine_error_code(e.code), e.message);
}

}  // namespace pagedserve
