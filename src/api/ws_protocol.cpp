// Parses and validates client frames with simdjson's DOM API; encodes server frames by hand
// (they are small and fixed in shape).
#include "pagedserve/ws_protocol.hpp"

#include <simdjson.h>

#include <cmath>
#include <limits>

namespace pagedserve {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr std::size_t max_id_length = 256;

struct bad_frame {
  std::string code, message;
};

bad_frame wrong_type(std::string_view field, std::string_view expected) {
  return {"invalid_request", "field '" + std::string(field) + "' must be " + std::string(expected)};
}

std::optional<bad_frame> read_number(element e, std::string_view field, double lo, double hi, double& out) {
  double v;
  if (e.type() == element_type::INT64) v = static_cast<double>(int64_t(e));
  else if (e.type() == element_type::UINT64) v = static_cast<double>(uint64_t(e));
  else if (e.type() == element_type::DOUBLE) v = double(e);
  else return wrong_type(field, "a number");
  if (!(v >= lo && v <= hi))
    return bad_frame{"invalid_request", "field '" + std::string(field) + "' is out of range [" +
                                            std::to_string(lo) + ", " + std::to_string(hi) + "]"};
  out = v;
  return std::nullopt;
}

std::optional<bad_frame> read_integer(element e, std::string_view field, std::int64_t lo, std::int64_t hi,
                                      std::int64_t& out) {
  if (e.type() != element_type::INT64 && e.type() != element_type::UINT64) return wrong_type(field, "an integer");
  if (e.type() == element_type::UINT64 && uint64_t(e) > static_cast<std::uint64_t>(hi))
    return bad_frame{"invalid_request", "field '" + std::string(field) + "' is too large"};
  const std::int64_t v = e.type() == element_type::INT64 ? int64_t(e) : static_cast<std::int64_t>(uint64_t(e));
  if (v < lo || v > hi)
    return bad_frame{field == "max_tokens" ? "invalid_max_tokens" : "invalid_request",
                     "field '" + std::string(field) + "' must be between " + std::to_string(lo) + " and " +
                         std::to_string(hi)};
  out = v;
  return std::nullopt;
}

std::optional<bad_frame> read_params(simdjson::dom::object params, sampling_params& p) {
  for (auto [key, value] : params) {
    double d = 0;
    std::int64_t i = 0;
    std::optional<bad_frame> err;
    if (key == "max_tokens") {
      err = read_integer(value, key, 1, std::numeric_limits<std::int32_t>::max(), i);
      p.max_tokens = static_cast<int>(i);
    } else if (key == "temperature") {
      err = read_number(value, key, 0.0, 100.0, d);
      p.temperature = static_cast<float>(d);
    } else if (key == "top_p") {
      err = read_number(value, key, 0.0, 1.0, d);
      if (!err && d <= 0.0) err = bad_frame{"invalid_request", "field 'top_p' must be in (0, 1]"};
      p.top_p = static_cast<float>(d);
    } else if (key == "top_k") {
      err = read_integer(value, key, -1, 1 << 24, i);
      p.top_k = i < 0 ? 0 : static_cast<int>(i);  // -1 means all, as vLLM
    } else if (key == "min_p") {
      err = read_number(value, key, 0.0, 1.0, d);
      p.min_p = static_cast<float>(d);
    } else if (key == "seed") {
      err = read_integer(value, key, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(), i);
      p.seed = static_cast<std::uint64_t>(i);
    } else if (key == "logprobs") {
      err = read_integer(value, key, 0, 20, i);
      p.logprobs = static_cast<int>(i);
    } else if (key == "presence_penalty" || key == "frequency_penalty") {
      err = read_number(value, key, -2.0, 2.0, d);
      (key == "presence_penalty" ? p.presence_penalty : p.frequency_penalty) = static_cast<float>(d);
    } else if (key == "repetition_penalty") {
      err = read_number(value, key, 0.01, 10.0, d);
      p.repetition_penalty = static_cast<float>(d);
    } else if (key == "cache_salt") {
      if (value.type() != element_type::STRING) err = wrong_type(key, "a string");
      else p.cache_salt = std::string(std::string_view(value));
    } else if (key == "ignore_eos") {
      if (value.type() != element_type::BOOL) err = wrong_type(key, "a boolean");
      else p.ignore_eos = bool(value);
    } else if (key == "stop") {
      if (value.type() == element_type::STRING) {
        p.stop.emplace_back(std::string_view(value));
      } else if (value.type() == element_type::ARRAY) {
        for (element s : simdjson::dom::array(value)) {
          if (s.type() != element_type::STRING) return wrong_type("stop", "a string or an array of strings");
          p.stop.emplace_back(std::string_view(s));
        }
      } else if (value.type() != element_type::NULL_VALUE) {
        err = wrong_type(key, "a string or an array of strings");
      }
      if (p.stop.size() > 16) err = bad_frame{"invalid_request", "at most 16 stop strings"};
      for (const auto& s : p.stop)
        if (s.empty() || s.size() > 256) err = bad_frame{"invalid_request", "stop strings must be 1 to 256 bytes"};
    } else {
      return bad_frame{"unknown_field", "unknown field 'params." + std::string(key) + "'"};
    }
    if (err) return err;
  }
  return std::nullopt;
}

std::optional<bad_frame> read_messages(simdjson::dom::array messages, std::vector<chat_message>& out) {
  for (element m : messages) {
    if (m.type() != element_type::OBJECT) return wrong_type("messages", "an array of {role, content} objects");
    chat_message msg;
    for (auto [key, value] : simdjson::dom::object(m)) {
      if (value.type() != element_type::STRING) return wrong_type("messages[]." + std::string(key), "a string");
      if (key == "role") msg.role = std::string_view(value);
      else if (key == "content") msg.content = std::string_view(value);
      else return bad_frame{"unknown_field", "unknown field 'messages[]." + std::string(key) + "'"};
    }
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant")
      return bad_frame{"invalid_request", "message role must be system, user or assistant"};
    out.push_back(std::move(msg));
  }
  if (out.empty()) return bad_frame{"invalid_request", "'messages' must not be empty"};
  return std::nullopt;
}

}  // namespace

client_frame parse_client_frame(std::string_view text) {
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
    return fail({"unknown_type", "unknown type '" + std::string(type) + "' (expected generate or cancel)"});
  if (!id) return fail({"invalid_request", "missing field 'id'"});

  if (type == "cancel") {
    for (auto [key, value] : obj)
      if (key != "type" && key != "id") return fail({"unknown_field", "unknown field '" + std::string(key) + "'"});
    return cancel_command{*id};
  }

  generate_command g;
  g.id = *id;
  g.params.max_tokens = 0;
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
      else err = read_params(simdjson::dom::object(value), g.params);
    } else {
      err = bad_frame{"unknown_field", "unknown field '" + std::string(key) + "'"};
    }
    if (err) return fail(std::move(*err));
  }
  if (g.prompt && has_messages) return fail({"invalid_request", "give either 'prompt' or 'messages', not both"});
  if (!g.prompt && !has_messages) return fail({"invalid_request", "missing field 'prompt' (or 'messages')"});
  return g;
}

void json_append_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(hex[c >> 4]);
          out.push_back(hex[c & 15]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

std::string encode_token_frame(std::string_view id, const token_event& e) {
  std::string out = R"({"type":"token","id":)";
  json_append_string(out, id);
  out += R"(,"text":)";
  json_append_string(out, e.text);
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
      out += R"({"logprob":)" + std::to_string(e.logprobs[i].logprob) + R"(,"top":[)";
      for (std::size_t k = 0; k < e.logprobs[i].top.size(); ++k) {
        if (k) out.push_back(',');
        out += "[" + std::to_string(e.logprobs[i].top[k].first) + "," + std::to_string(e.logprobs[i].top[k].second) + "]";
      }
      out += "]}";
    }
    out += "]";
  }
  out += "}";
  return out;
}

std::string encode_done_frame(std::string_view id, finish_reason reason, const usage& used, const request_timings& t) {
  std::string out = R"({"type":"done","id":)";
  json_append_string(out, id);
  out += R"(,"finish_reason":")" + std::string(finish_reason_name(reason)) + '"';
  out += R"(,"usage":{"prompt_tokens":)" + std::to_string(used.prompt_tokens) +
         R"(,"completion_tokens":)" + std::to_string(used.completion_tokens) +
         R"(,"total_tokens":)" + std::to_string(used.prompt_tokens + used.completion_tokens) + "}";
  auto num = [](double v) { return std::isfinite(v) ? std::to_string(v) : std::string("0"); };
  out += R"(,"timings":{"ttft_ms":)" + num(t.time_to_first_token_ms) +
         R"(,"total_ms":)" + num(t.total_ms) + R"(,"tokens_per_second":)" + num(t.tokens_per_second) + "}}";
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

}  // namespace pagedserve
