// Under special_tokens_in_content::text, each special-token string inside a message's content is
// wrapped in guard bytes (0xFF, which valid UTF-8 never holds, and contents are validated JSON
// strings) before rendering. The template moves the contents wherever it likes; afterwards the
// guards are cut out and the byte ranges they enclosed are passed to the tokenizer as literal text.
#include "chat/chat_prompt.hpp"

#include <optional>

namespace pagedserve {
namespace {

constexpr char guard = '\xFF';

// content with every special-token string the tokenizer finds in it wrapped in guards.
std::string guard_specials(std::string_view content, const tokenizer& tok) {
  std::string out;
  std::size_t done = 0;
  for (const text_range& r : tok.find_special_tokens(content)) {
    out.append(content.substr(done, r.begin - done));
    out.push_back(guard);
    out.append(content.substr(r.begin, r.end - r.begin));
    out.push_back(guard);
    done = r.end;
  }
  out.append(content.substr(done));
  return out;
}

// The rendered text without guards, and the ranges that lay between each pair of them.
std::string cut_guards(std::string_view rendered, std::vector<text_range>& literal) {
  std::string out;
  out.reserve(rendered.size());
  std::optional<std::size_t> open;
  for (const char c : rendered) {
    if (c != guard) {
      out.push_back(c);
      continue;
    }
    if (open) {
      if (out.size() > *open) literal.push_back({*open, out.size()});
      open.reset();
    } else {
      open = out.size();
    }
  }
  return out;
}

}  // namespace

std::optional<special_tokens_in_content> special_tokens_in_content_from(std::string_view name) {
  if (name == "parse") return special_tokens_in_content::parse;
  if (name == "text") return special_tokens_in_content::text;
  return std::nullopt;
}

std::expected<std::vector<token_id>, std::string> chat_prompt_encode(const chat_template& tpl, chat_template_context ctx,
                                                                     const tokenizer& tok,
                                                                     special_tokens_in_content mode) {
  if (mode == special_tokens_in_content::parse) {
    auto rendered = tpl.render(ctx);
    if (!rendered) return std::unexpected(rendered.error());
    return tok.encode(*rendered, false);
  }
  for (chat_value& m : ctx.messages) {
    auto* fields = std::get_if<chat_value::object>(&m.data);
    if (!fields) continue;
    for (auto& [key, v] : *fields)
      if (auto* content = std::get_if<std::string>(&v.data); content && key == "content")
        *content = guard_specials(*content, tok);
  }
  auto rendered = tpl.render(ctx);
  if (!rendered) return std::unexpected(rendered.error());
  std::vector<text_range> literal;
  const std::string text = cut_guards(*rendered, literal);
  return tok.encode_with_literal_ranges(text, false, literal);
}

}  // namespace pagedserve
