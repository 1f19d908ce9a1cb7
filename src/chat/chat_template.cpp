// The public face of the template interpreter: parse once per model, render per request, and
// read a model's template and special tokens from tokenizer_config.json the way transformers does.
#include "chat/chat_template.hpp"

#include <simdjson.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "chat/jinja_interp.hpp"

namespace pagedserve {

struct chat_template::program {
  jinja::body statements;
};

namespace {

jinja::value to_value(const chat_value& v) {
  return std::visit(
      [](const auto& x) -> jinja::value {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::nullptr_t>)
          return jinja::none_t{};
        else if constexpr (std::is_same_v<T, chat_value::array>) {
          jinja::list out;
          out.reserve(x.size());
          for (const auto& item : x) out.push_back(to_value(item));
          return out;
        } else if constexpr (std::is_same_v<T, chat_value::object>) {
          jinja::dict out;
          for (const auto& [k, item] : x) out.set(k, to_value(item));
          return out;
        } else {
          return x;
        }
      },
      v.data);
}

using simdjson::ondemand::json_type;

std::unexpected<std::string> json_error(simdjson::error_code e) {
  return std::unexpected(std::string("invalid JSON: ") + simdjson::error_message(e));
}

// One JSON value (a document or a value inside one) as a chat_value. On-demand parsing, because
// simdjson's DOM rejects the integers beyond 64 bits that tokenizer configs contain
// (model_max_length = 1e30): those become floats here.
template <class V>
std::expected<chat_value, std::string> from_json(V& v) {
  json_type type;
  if (auto e = v.type().get(type)) return json_error(e);
  switch (type) {
    case json_type::null:
      return chat_value(nullptr);
    case json_type::boolean: {
      bool b = false;
      if (auto e = v.get_bool().get(b)) return json_error(e);
      return chat_value(b);
    }
    case json_type::number: {
      simdjson::ondemand::number_type kind;
      if (auto e = v.get_number_type().get(kind)) return json_error(e);
      if (kind == simdjson::ondemand::number_type::signed_integer) {
        std::int64_t i = 0;
        if (auto e = v.get_int64().get(i)) return json_error(e);
        return chat_value(i);
      }
      double d = 0;
      if (auto e = v.get_double().get(d)) return json_error(e);
      return chat_value(d);
    }
    case json_type::string: {
      std::string_view s;
      if (auto e = v.get_string().get(s)) return json_error(e);
      return chat_value(s);
    }
    case json_type::array: {
      simdjson::ondemand::array arr;
      if (auto e = v.get_array().get(arr)) return json_error(e);
      chat_value::array out;
      for (auto element : arr) {
        simdjson::ondemand::value item;
        if (auto e = element.get(item)) return json_error(e);
        auto converted = from_json(item);
        if (!converted) return converted;
        out.push_back(std::move(*converted));
      }
      return chat_value(std::move(out));
    }
    case json_type::object: {
      simdjson::ondemand::object obj;
      if (auto e = v.get_object().get(obj)) return json_error(e);
      chat_value::object out;
      for (auto field : obj) {
        std::string_view key;
        if (auto e = field.unescaped_key().get(key)) return json_error(e);
        simdjson::ondemand::value item;
        if (auto e = field.value().get(item)) return json_error(e);
        auto converted = from_json(item);
        if (!converted) return converted;
        // A repeated key keeps its first position and its last value, as Python's json does.
        auto same = std::find_if(out.begin(), out.end(), [&](const auto& kv) { return kv.first == key; });
        if (same != out.end())
          same->second = std::move(*converted);
        else
          out.emplace_back(std::string(key), std::move(*converted));
      }
      return chat_value(std::move(out));
    }
  }
  return std::unexpected(std::string("unsupported JSON value"));
}

// A special token as tokenizer_config.json writes it: a string, an AddedToken object, or null.
std::optional<std::string> token_text(simdjson::ondemand::value v) {
  std::string_view s;
  if (v.get_string().get(s) == simdjson::SUCCESS) return std::string(s);
  simdjson::ondemand::object obj;
  if (v.get_object().get(obj) == simdjson::SUCCESS &&
      obj.find_field_unordered("content").get_string().get(s) == simdjson::SUCCESS)
    return std::string(s);
  return std::nullopt;
}

// "chat_template" is a string or, for models with several, a list of {"name", "template"}.
std::expected<std::optional<std::string>, std::string> template_field(simdjson::ondemand::value v) {
  std::string_view s;
  if (v.is_null()) return std::nullopt;
  if (v.get_string().get(s) == simdjson::SUCCESS) return std::string(s);
  simdjson::ondemand::array named;
  if (v.get_array().get(named) != simdjson::SUCCESS)
    return std::unexpected(std::string("chat_template must be a string or a list"));
  for (auto entry : named) {
    simdjson::ondemand::object obj;
    std::string_view name, text;
    if (entry.get_object().get(obj) != simdjson::SUCCESS) continue;
    if (obj.find_field_unordered("name").get_string().get(name) == simdjson::SUCCESS && name == "default" &&
        obj.find_field_unordered("template").get_string().get(text) == simdjson::SUCCESS)
      return std::string(text);
  }
  return std::unexpected(std::string("chat_template list has no \"default\" entry"));
}

// Reads the chat-template fields of one JSON file (tokenizer_config.json or chat_template.json).
std::expected<tokenizer_chat_config, std::string> config_read(const std::filesystem::path& path) {
  const std::string where = path.string();
  simdjson::padded_string json;
  if (simdjson::padded_string::load(where).get(json) != simdjson::SUCCESS)
    return std::unexpected(where + ": not readable");
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  simdjson::ondemand::object root;
  if (parser.iterate(json).get(doc) != simdjson::SUCCESS || doc.get_object().get(root) != simdjson::SUCCESS)
    return std::unexpected(where + ": not a JSON object");
  tokenizer_chat_config out;
  for (auto field : root) {
    std::string_view key;
    simdjson::ondemand::value v;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS || field.value().get(v) != simdjson::SUCCESS)
      return std::unexpected(where + ": not a valid JSON object");
    if (key == "chat_template") {
      auto t = template_field(v);
      if (!t) return std::unexpected(where + ": " + t.error());
      out.chat_template = std::move(*t);
    } else if (key == "bos_token") {
      out.bos_token = token_text(v);
    } else if (key == "eos_token") {
      out.eos_token = token_text(v);
    }
  }
  return out;
}

std::optional<std::string> read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::expected<chat_value, std::string> chat_value_parse_json(std::string_view json) {
  const simdjson::padded_string padded(json);
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (auto e = parser.iterate(padded).get(doc)) return json_error(e);
  auto v = from_json(doc);
  const char* rest = nullptr;  // current_location() succeeds only while tokens remain
  if (v && doc.current_location().get(rest) == simdjson::SUCCESS)
    return std::unexpected(std::string("invalid JSON: trailing content"));
  return v;
}

std::expected<chat_template, std::string> chat_template::parse(std::string_view source) {
  auto tokens = jinja::lex(source);
  if (!tokens) return std::unexpected("chat template: " + tokens.error());
  auto statements = jinja::parse(std::move(*tokens));
  if (!statements) return std::unexpected("chat template: " + statements.error());
  return chat_template(std::make_shared<const program>(program{std::move(*statements)}));
}

std::expected<std::string, std::string> chat_template::render(const chat_template_context& ctx,
                                                              const chat_template_limits& limits) const {
  jinja::dict root;
  jinja::globals_add(root);
  jinja::list messages;
  messages.reserve(ctx.messages.size());
  for (const auto& m : ctx.messages) messages.push_back(to_value(m));
  root.set("messages", std::move(messages));
  root.set("add_generation_prompt", ctx.add_generation_prompt);
  if (ctx.bos_token) root.set("bos_token", *ctx.bos_token);
  if (ctx.eos_token) root.set("eos_token", *ctx.eos_token);
  for (const auto& [name, v] : ctx.variables) root.set(name, to_value(v));
  jinja::interpreter in(limits, std::move(root), ctx.now);
  auto text = in.render(program_->statements);
  if (!text) return std::unexpected("chat template: " + text.error());
  return text;
}

std::expected<tokenizer_chat_config, std::string> chat_template_load(
    const std::filesystem::path& tokenizer_config_json) {
  auto out = config_read(tokenizer_config_json);
  if (!out || out->chat_template) return out;
  const auto dir = tokenizer_config_json.parent_path();
  out->chat_template = read_text(dir / "chat_template.jinja");
  if (!out->chat_template && std::filesystem::exists(dir / "chat_template.json")) {
    auto side = config_read(dir / "chat_template.json");
    if (!side) return std::unexpected(side.error());
    out->chat_template = std::move(side->chat_template);
  }
  return out;
}

}  // namespace pagedserve
