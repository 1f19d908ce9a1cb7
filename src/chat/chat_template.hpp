#pragma once
// Chat templates: the Jinja programs in tokenizer_config.json ("chat_template") that turn a list of
// messages into the exact prompt text a model was trained on. A request with `messages` must be
// rendered by the model's own template, so this is a small interpreter of the Jinja subset those
// templates use, matching Python jinja2 as Hugging Face transformers sets it up for
// apply_chat_template (sandboxed and immutable, trim_blocks, lstrip_blocks, break/continue, a tojson
// that does not HTML-escape, raise_exception, strftime_now) byte for byte.
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace pagedserve {

// A JSON-shaped value handed to a template: messages, tools, extra keyword arguments.
// Objects keep insertion order, as Python dicts do; it shows in tojson output.
struct chat_value {
  using array = std::vector<chat_value>;
  using object = std::vector<std::pair<std::string, chat_value>>;

  chat_value() : data(nullptr) {}
  chat_value(std::nullptr_t) : data(nullptr) {}
  chat_value(bool b) : data(b) {}
  template <std::integral T>
  requires(!std::same_as<T, bool>) chat_value(T i) : data(static_cast<std::int64_t>(i)) {}
  chat_value(double d) : data(d) {}
  chat_value(const char* s) : data(std::string(s)) {}
  chat_value(std::string_view s) : data(std::string(s)) {}
  chat_value(std::string s) : data(std::move(s)) {}
  chat_value(array a) : data(std::move(a)) {}
  chat_value(object o) : data(std::move(o)) {}

  std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, array, object> data;
};

// Parses JSON text (a messages file, a request's tools) into a chat_value, keeping key order.
std::expected<chat_value, std::string> chat_value_parse_json(std::string_view json);

// Everything a template can see, as transformers passes it to apply_chat_template.
struct chat_template_context {
  chat_value::array messages;            // objects with "role", "content" and any other fields (tool_calls, ...)
  bool add_generation_prompt = false;    // end with the header that opens the assistant's turn
  std::optional<std::string> bos_token;  // the tokenizer's special tokens; absent ones are undefined
  std::optional<std::string> eos_token;
  chat_value::object variables;    // further variables (tools, enable_thinking, ...); override the above
  std::chrono::sys_seconds now{};  // the time strftime_now() formats, in UTC; set by the caller
};

// Bounds on one render, so a hostile or buggy template ends with an error instead of hanging,
// exhausting the stack or filling memory.
struct chat_template_limits {
  int max_call_depth = 64;                     // nested macro calls
  int max_eval_depth = 500;                    // statements and expressions being evaluated at once, macro
                                               // calls included: bounds stack use (about 2 KiB each)
  std::int64_t max_loop_iterations = 1000000;  // for-loop iterations over the whole render
  std::size_t max_output_bytes = 16u << 20;    // the rendered text, and any one string or list made on the way
  std::int64_t max_range_items = 100000;       // items one range() call may make
  // Bounds on the work of one render, which a message's content must not be able to make unbounded
  // (the template is trusted config; the messages are not): statements and expressions evaluated,
  // and the bytes/items of every string and list built on the way, summed.
  std::int64_t max_render_steps = 10000000;
  std::uint64_t max_built_bytes = 256u << 20;
};

// A parsed template. Immutable and cheap to copy (the program is shared), so one instance per
// model can render for every request concurrently.
class chat_template {
 public:
  struct program;  // the parsed statements, in src/chat/

  // Syntax errors (unterminated tags, unknown statements, unbalanced blocks) name the line.
  static std::expected<chat_template, std::string> parse(std::string_view source);
  // Runtime errors (unknown filter, raise_exception, undefined used as a value, limits) name the line.
  std::expected<std::string, std::string> render(const chat_template_context& ctx,
                                                 const chat_template_limits& limits = {}) const;

 private:
  explicit chat_template(std::shared_ptr<const program> p) : program_(std::move(p)) {}
  std::shared_ptr<const program> program_;
};

// The chat-template part of a Hugging Face tokenizer_config.json.
struct tokenizer_chat_config {
  std::optional<std::string> chat_template;  // template source; a named list picks "default"
  std::optional<std::string> bos_token;      // string or AddedToken {"content": ...}; null means absent
  std::optional<std::string> eos_token;
};

// Reads tokenizer_config.json. When it has no chat_template, a chat_template.jinja or
// chat_template.json beside it (newer transformers) is used; a tokenizer without any (Llama 2)
// gives chat_template == nullopt, not an error.
std::expected<tokenizer_chat_config, std::string> chat_template_load(
    const std::filesystem::path& tokenizer_config_json);

}  // namespace pagedserve
