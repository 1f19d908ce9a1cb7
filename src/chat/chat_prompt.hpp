#pragma once
// A chat prompt's token ids: the conversation rendered through the model's template, then tokenized.
// The template writes BOS and control tokens (<|im_start|>, <|eot_id|>, ...) as text that the
// tokenizer turns back into their ids. Whether the same strings typed into a message's content do so
// too is the server's choice (--special-tokens-in-content): Hugging Face and vLLM parse them (a user
// can end a turn early or open a system one), "text" encodes them as the characters they are.
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.hpp"
#include "pagedserve/ids.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagedserve {

enum class special_tokens_in_content { parse, text };

// "parse" or "text"; nothing for any other name.
std::optional<special_tokens_in_content> special_tokens_in_content_from(std::string_view name);

// Renders ctx (no BOS added: the template writes it) and tokenizes the result. Under text, every
// special-token string inside a message's "content" string is tokenized as plain text, while the
// template's own special tokens stay special. Errors are the template's.
std::expected<std::vector<token_id>, std::string> chat_prompt_encode(const chat_template& tpl, chat_template_context ctx,
                                                                     const tokenizer& tok,
                                                                     special_tokens_in_content mode);

}  // namespace pagedserve
