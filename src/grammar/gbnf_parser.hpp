#pragma once
// llama.cpp's grammar dialect (GBNF): `name ::= alternatives`, literals "..." with C/JSON escapes,
// character classes [a-z] and [^...], `.` (any character), groups, and the quantifiers * + ? {m}
// {m,} {m,n}; # comments. Rules may continue over lines; the output must match the rule `root`.
#include <expected>
#include <string>
#include <string_view>

#include "grammar/grammar.hpp"

namespace pagedserve::grammar {

// The grammar, or an error "line L, column C: what is wrong". A non-empty prefix or suffix is
// literal text the output must start or end with around what `root` matches.
std::expected<grammar, std::string> parse_gbnf(std::string_view text, std::string_view prefix = {},
                                               std::string_view suffix = {});

}  // namespace pagedserve::grammar
