#pragma once
// Whole-string and prefix matching against a compiled output format, for the grammar tests.
#include <gtest/gtest.h>

#include "grammar/grammar_matcher.hpp"
#include "grammar/output_format_compiler.hpp"

namespace pagedserve::grammar::grammar_test {

inline std::shared_ptr<const grammar> compiled(output_format::kind type, std::string spec) {
  auto g = compile_output_format({type, std::move(spec), "", ""});
  EXPECT_TRUE(g.has_value()) << g.error();
  return g ? *g : nullptr;
}

inline std::string compile_error(output_format::kind type, std::string spec) {
  auto g = compile_output_format({type, std::move(spec), "", ""});
  return g ? "" : g.error();
}

inline bool matches(const std::shared_ptr<const grammar>& g, std::string_view s) {
  grammar_matcher m(g);
  return m.accept(s) && m.can_end();
}

}  // namespace pagedserve::grammar::grammar_test
