// The chat-template interpreter on hostile templates and hostile messages. Input: template source,
// then optionally a NUL byte and the messages: a JSON array of message objects if it parses as one
// (chat_value_parse_json is fuzzed on the way), else the content of one user message. Tight limits
// keep each run short; hitting one must be an error, never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "chat/chat_template.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using pagedserve::chat_value;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view source = input.substr(0, nul);
  const std::string_view rest = nul == std::string_view::npos ? std::string_view{} : input.substr(nul + 1);

  const auto tmpl = pagedserve::chat_template::parse(source);
  if (!tmpl) return 0;

  pagedserve::chat_template_context ctx;
  auto parsed = pagedserve::chat_value_parse_json(rest);
  if (parsed && std::holds_alternative<chat_value::array>(parsed->data)) {
    ctx.messages = std::get<chat_value::array>(std::move(parsed->data));
  } else {
    ctx.messages = {chat_value::object{{"role", "system"}, {"content", "Be brief."}},
                    chat_value::object{{"role", "user"}, {"content", std::string(rest)}}};
  }
  ctx.add_generation_prompt = size % 2 == 0;
  ctx.bos_token = "<s>";
  ctx.eos_token = "</s>";
  const pagedserve::chat_template_limits limits{
      .max_call_depth = 16, .max_eval_depth = 200, .max_loop_iterations = 20000, .max_output_bytes = 1u << 20};
  (void)tmpl->render(ctx, limits);
  return 0;
}
