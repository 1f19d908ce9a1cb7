// Parses and validates OpenAI request bodies. A JSON null counts as an absent argument (the
// official SDKs send null for "not given"); any other value must have the documented type and range.
#include "api/openai_request.hpp"

#include <unordered_map>

#include "api/chat_fields.hpp"
#include "api/openai_params.hpp"

namespace pagedserve::openai {
namespace {

using namespace detail;

// A JSON object's duplicate keys mean its last value (as Python's json and OpenAI read them), so a
// body repeating one token id 130k times yields one entry, and the distinct ids are bounded as OpenAI
// documents: the sampler applies every entry to every token it samples.
maybe_error read_logit_bias(element e, int vocab_size, std::vector<std::pair<token_id, float>>& out) {
  if (e.type() != element_type::OBJECT) return wrong_type("logit_bias", "an object of token id -> bias");
  std::unordered_map<token_id, std::size_t> index;  // token id -> its entry in out
  for (auto [key, value] : simdjson::dom::object(e)) {
    long long id = -1;
    std::size_t used = 0;
    try {
      id = std::stoll(std::string(key), &used);
    } catch (...) {
      used = 0;
    }
    if (used != key.size() || id < 0 || (vocab_size > 0 && id >= vocab_size))
      return bad_param("logit_bias", "logit_bias keys must be token ids in [0, " + std::to_string(vocab_size) + ")");
    double bias = 0;
    if (auto err = read_number(value, "logit_bias", -100.0, 100.0, bias)) return err;
    const auto t = static_cast<token_id>(id);
    if (auto it = index.find(t); it != index.end()) {
      out[it->second].second = static_cast<float>(bias);
      continue;
    }
    if (out.size() >= max_logit_bias_entries)
      return bad_param("logit_bias", "logit_bias may name at most " + std::to_string(max_logit_bias_entries) + " tokens");
    index.emplace(t, out.size());
    out.emplace_back(t, static_cast<float>(bias));
  }
  return std::nullopt;
}

maybe_error read_stream_options(element e, generation_request& r) {
  if (e.type() != element_type::OBJECT) return wrong_type("stream_options", "an object");
  for (auto [key, value] : simdjson::dom::object(e)) {
    if (is_null(value)) continue;
    bool flag = false;
    if (key == "include_usage") {
      if (auto err = read_bool(value, "stream_options.include_usage", flag)) return err;
      r.include_usage = flag;
    } else if (key == "continuous_usage_stats") {
      if (auto err = read_bool(value, "stream_options.continuous_usage_stats", flag)) return err;
      if (flag) return bad_param("stream_options.continuous_usage_stats", "continuous_usage_stats is not supported");
    } else {
      return bad_param("stream_options", "Unrecognized stream option: " + std::string(key));
    }
  }
  return std::nullopt;
}

// Content of a message: a string, or an array of {"type":"text","text":...} parts joined.
maybe_error read_content(element e, std::string& out) {
  if (e.type() == element_type::STRING) {
    out = std::string_view(e);
    return std::nullopt;
  }
  if (e.type() != element_type::ARRAY) return wrong_type("messages[].content", "a string or an array of text parts");
  for (element part : simdjson::dom::array(e)) {
    std::string_view type, text;
    if (part.type() != element_type::OBJECT || part["type"].get(type) != simdjson::SUCCESS)
      return wrong_type("messages[].content", "a string or an array of text parts");
    if (type != "text")
      return bad_param("messages[].content", "content parts of type '" + std::string(type) + "' are not supported");
    if (part["text"].get(text) != simdjson::SUCCESS) return wrong_type("messages[].content[].text", "a string");
    out += text;
  }
  return std::nullopt;
}

maybe_error read_messages(element e, std::vector<chat_message>& out) {
  if (e.type() != element_type::ARRAY) return wrong_type("messages", "an array of messages");
  for (element m : simdjson::dom::array(e)) {
    if (m.type() != element_type::OBJECT) return wrong_type("messages", "an array of {role, content} objects");
    chat_message msg;
    bool has_content = false;
    for (auto [key, value] : simdjson::dom::object(m)) {
      if (is_null(value) && key != "role") continue;  // content: null beside tool_calls
      maybe_error err;
      if (key == "role") {
        err = read_string(value, "messages[].role", msg.role);
      } else if (key == "content") {
        err = read_content(value, msg.content);
        has_content = true;
      } else if (key == "name") {
        err = read_string(value, "messages[].name", msg.name);
      } else if (key == "tool_calls") {
        err = api::read_message_tool_calls(value, msg.tool_calls_json);
      } else if (key == "tool_call_id") {
        err = read_string(value, "messages[].tool_call_id", msg.tool_call_id);
      } else if (key == "reasoning_content") {
        err = read_string(value, "messages[].reasoning_content", msg.reasoning_content);
      } else if (key == "function_call") {
        err = bad_param("messages", "function_call is deprecated and not supported: use tool_calls");
      } else {
        err = bad_param("messages", "Unrecognized message field: " + std::string(key));
      }
      if (err) return err;
    }
    if (msg.role == "developer") msg.role = "system";  // OpenAI's newer name for the system role
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool")
      return bad_param("messages", "message role must be system, developer, user, assistant or tool");
    if (!msg.tool_calls_json.empty() && msg.role != "assistant")
      return bad_param("messages", "only assistant messages carry tool_calls");
    if (!has_content && msg.tool_calls_json.empty())
      return bad_param("messages", "every message needs 'content' (an assistant message may have tool_calls instead)");
    out.push_back(std::move(msg));
  }
  if (out.empty()) return bad_param("messages", "'messages' must not be empty");
  return std::nullopt;
}

// prompt: a string, an array of strings, an array of token ids, or an array of such arrays.
maybe_error read_prompt(element e, int vocab_size, std::vector<prompt_input>& out) {
  if (e.type() == element_type::STRING) {
    out.push_back({std::string(std::string_view(e)), {}});
    return std::nullopt;
  }
  if (e.type() != element_type::ARRAY) return wrong_type("prompt", "a string, an array of strings or of token ids");
  simdjson::dom::array items(e);
  if (items.size() == 0) return bad_param("prompt", "'prompt' must not be empty");
  element first = items.at(0).value_unsafe();
  if (first.type() == element_type::INT64 || first.type() == element_type::UINT64) {
    prompt_input p;
    if (auto err = read_token_ids(e, "prompt", vocab_size, p.ids)) return err;
    out.push_back(std::move(p));
    return std::nullopt;
  }
  for (element item : items) {
    prompt_input p;
    if (item.type() == element_type::STRING) {
      p.text = std::string(std::string_view(item));
    } else if (item.type() == element_type::ARRAY) {
      if (auto err = read_token_ids(item, "prompt", vocab_size, p.ids)) return err;
      if (p.ids.empty()) return bad_param("prompt", "a token-id prompt must not be empty");
    } else {
      return wrong_type("prompt", "a string, an array of strings or of token ids");
    }
    out.push_back(std::move(p));
  }
  return std::nullopt;
}

std::expected<simdjson::dom::object, api_error> parse_object(simdjson::dom::parser& parser, std::string_view body) {
  element root;
  if (parser.parse(body.data(), body.size()).get(root) != simdjson::SUCCESS)
    return std::unexpected(api_error{400, "We could not parse the JSON body of your request: it is not valid JSON",
                                     "invalid_request_error", "", "invalid_json"});
  if (root.type() != element_type::OBJECT)
    return std::unexpected(api_error{400, "the request body must be a JSON object", "invalid_request_error", "",
                                     "invalid_json"});
  return simdjson::dom::object(root);
}

// An argument the generation endpoints do not know: ignored and reported (see openai_request.hpp).
void ignore(std::string_view key, generation_request& r) { r.ignored_fields.emplace_back(key); }

api::field_error unrecognized(std::string_view key) {
  return {std::string(key), "Unrecognized request argument supplied: " + std::string(key), "unknown_parameter"};
}

std::unexpected<api_error> fail(api::field_error e) { return std::unexpected(to_api_error(std::move(e))); }

// Checks shared by both endpoints once every field is read.
maybe_error finish(generation_request& r, bool has_stream_options, const parse_limits& limits) {
  if (has_stream_options && !r.stream) return bad_param("stream_options", "stream_options is only allowed with stream");
  const std::size_t n_prompts = r.kind == endpoint::completions ? r.prompts.size() : 1;
  if (n_prompts * static_cast<std::size_t>(r.n) > static_cast<std::size_t>(limits.max_choices))
    return bad_param("n", "at most " + std::to_string(limits.max_choices) + " choices per request (n times prompts)");
  return std::nullopt;
}

}  // namespace

namespace detail {

bool read_sampling_field(std::string_view key, element value, const parse_limits& limits, generation_request& r,
                         maybe_error& err) {
  std::int64_t i = 0;
  std::string ignored;
  if (api::read_sampling_param(key, value, r.params, err)) {
    return true;
  } else if (key == "model") {
    err = read_string(value, key, r.model);
  } else if (key == "n") {
    err = read_integer(value, key, 1, limits.max_n, i);
    r.n = static_cast<int>(i);
  } else if (key == "logit_bias") {
    err = read_logit_bias(value, limits.vocab_size, r.params.logit_bias);
  } else if (key == "stream") {
    err = read_bool(value, key, r.stream);
  } else if (key == "stream_options") {
    err = read_stream_options(value, r);
  } else if (key == "user") {
    err = read_string(value, key, r.user);
  } else if (key == "service_tier") {
    err = read_string(value, key, ignored);
  } else if (key == "store") {
    bool flag = false;
    err = read_bool(value, key, flag);
  } else if (key == "metadata") {
    if (value.type() != element_type::OBJECT) err = wrong_type(key, "an object");
  } else {
    return false;
  }
  return true;
}

}  // namespace detail

std::expected<generation_request, api_error> parse_completion_request(std::string_view body, const parse_limits& limits) {
  simdjson::dom::parser parser;
  auto obj = parse_object(parser, body);
  if (!obj) return std::unexpected(obj.error());
  generation_request r;
  r.kind = endpoint::completions;
  r.params = limits.defaults;
  r.params.max_tokens = 16;  // OpenAI's default for legacy completions
  bool has_stream_options = false;
  std::optional<std::int64_t> best_of;
  for (auto [key, value] : *obj) {
    if (is_null(value)) continue;
    maybe_error err;
    std::int64_t i = 0;
    if (read_sampling_field(key, value, limits, r, err)) {
      has_stream_options |= key == "stream_options";
    } else if (key == "prompt") {
      err = read_prompt(value, limits.vocab_size, r.prompts);
    } else if (key == "echo") {
      err = read_bool(value, key, r.echo);
    } else if (key == "logprobs") {
      err = read_integer(value, key, 0, limits.max_logprobs, i);
      r.params.logprobs = static_cast<int>(i);
      r.logprobs = true;
    } else if (key == "best_of") {
      err = read_integer(value, key, 1, limits.max_n, i);
      best_of = i;
    } else if (key == "suffix") {
      std::string suffix;
      err = read_string(value, key, suffix);
      if (!err && !suffix.empty()) err = bad_param(key, "'suffix' is not supported");
    } else {
      ignore(key, r);
    }
    if (err) return fail(std::move(*err));
  }
  if (r.prompts.empty()) return fail(bad_param("prompt", "missing required argument 'prompt'"));
  if (best_of && *best_of != r.n) return fail(bad_param("best_of", "best_of must equal n"));
  if (r.echo && r.logprobs)
    return fail(bad_param("echo", "echo with logprobs is not supported (prompt logprobs are not computed)"));
  if (auto err = finish(r, has_stream_options, limits)) return fail(std::move(*err));
  return r;
}

std::expected<generation_request, api_error> parse_chat_request(std::string_view body, const parse_limits& limits) {
  simdjson::dom::parser parser;
  auto obj = parse_object(parser, body);
  if (!obj) return std::unexpected(obj.error());
  generation_request r;
  r.kind = endpoint::chat_completions;
  r.params = limits.defaults;  // max_tokens 0: as long as the context allows
  bool has_stream_options = false, has_messages = false;
  std::optional<std::int64_t> top_logprobs;
  for (auto [key, value] : *obj) {
    if (is_null(value)) continue;
    maybe_error err;
    std::int64_t i = 0;
    if (read_sampling_field(key, value, limits, r, err)) {
      has_stream_options |= key == "stream_options";
    } else if (key == "messages") {
      err = read_messages(value, r.messages);
      has_messages = true;
    } else if (key == "logprobs") {
      err = read_bool(value, key, r.logprobs);
    } else if (key == "top_logprobs") {
      err = read_integer(value, key, 0, limits.max_logprobs, i);
      top_logprobs = i;
    } else if (api::read_chat_option(key, value, r.chat, err)) {
    } else {
      ignore(key, r);
    }
    if (err) return fail(std::move(*err));
  }
  if (!has_messages) return fail(bad_param("messages", "missing required argument 'messages'"));
  if (auto err = api::check_chat_options(r.chat)) return fail(std::move(*err));
  if (top_logprobs && !r.logprobs)
    return fail(bad_param("top_logprobs", "top_logprobs needs logprobs set to true"));
  if (r.logprobs) r.params.logprobs = static_cast<int>(top_logprobs.value_or(0));
  if (auto err = finish(r, has_stream_options, limits)) return fail(std::move(*err));
  return r;
}

std::expected<tokenize_request, api_error> parse_tokenize_request(std::string_view body) {
  simdjson::dom::parser parser;
  auto obj = parse_object(parser, body);
  if (!obj) return std::unexpected(obj.error());
  tokenize_request r;
  bool has_prompt = false;
  for (auto [key, value] : *obj) {
    if (is_null(value)) continue;
    maybe_error err;
    if (key == "model") err = read_string(value, key, r.model);
    else if (key == "prompt") err = read_string(value, key, r.prompt), has_prompt = true;
    else if (key == "add_special_tokens") err = read_bool(value, key, r.add_special_tokens);
    else if (key == "return_token_strs") err = read_bool(value, key, r.return_token_strs);
    else if (key == "messages") err = bad_param(key, "/tokenize takes a 'prompt'; chat messages are not supported");
    else err = unrecognized(key);
    if (err) return fail(std::move(*err));
  }
  if (!has_prompt) return fail(bad_param("prompt", "missing required argument 'prompt'"));
  return r;
}

std::expected<detokenize_request, api_error> parse_detokenize_request(std::string_view body, const parse_limits& limits) {
  simdjson::dom::parser parser;
  auto obj = parse_object(parser, body);
  if (!obj) return std::unexpected(obj.error());
  detokenize_request r;
  bool has_tokens = false;
  for (auto [key, value] : *obj) {
    if (is_null(value)) continue;
    maybe_error err;
    if (key == "model") err = read_string(value, key, r.model);
    else if (key == "tokens") err = read_token_ids(value, key, limits.vocab_size, r.tokens), has_tokens = true;
    else err = unrecognized(key);
    if (err) return fail(std::move(*err));
  }
  if (!has_tokens) return fail(bad_param("tokens", "missing required argument 'tokens'"));
  return r;
}

api_error error_from_engine(const engine_failure& e) {
  const engine_error_wire& w = engine_error_info(e.code);
  return {w.http_status, e.message, std::string(w.openai_type), std::string(w.param), std::string(w.code)};
}

}  // namespace pagedserve::openai
