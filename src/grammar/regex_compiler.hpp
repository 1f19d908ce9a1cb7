#pragma once
// ECMAScript regular expressions (the subset JSON Schema's `pattern` and vLLM's guided_regex use:
// literals and escapes, classes with ranges and negation, \d \w \s and their complements, `.`,
// groups (capturing, non-capturing, named), alternation, * + ? {m} {m,} {m,n}, lazy forms) turned
// into one GBNF expression. The whole output must match: ^ and $ at the ends are implied and
// accepted; lookaround, backreferences and word boundaries are errors.
#include <expected>
#include <string>
#include <string_view>

namespace pagedserve::grammar {

// json_string: the expression matches the text inside a JSON string literal, so a literal '"' or
// '\' becomes its escape and classes never match a quote, a backslash or a control character.
std::expected<std::string, std::string> regex_to_gbnf(std::string_view pattern, bool json_string = false);

// `text` as a GBNF string literal, quotes included.
std::string gbnf_literal(std::string_view text);

}  // namespace pagedserve::grammar
