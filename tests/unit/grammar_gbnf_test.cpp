// The GBNF parser and the byte matcher: which strings a grammar accepts, which prefixes it lets
// through, and the errors (with positions) for bad grammars.
#include <gtest/gtest.h>

#include "grammar/gbnf_parser.hpp"
#include "grammar/grammar_matcher.hpp"

namespace pagedserve::grammar {
namespace {

std::shared_ptr<const grammar> parsed(std::string_view text, std::string_view prefix = {}, std::string_view suffix = {}) {
  auto g = parse_gbnf(text, prefix, suffix);
  EXPECT_TRUE(g.has_value()) << g.error();
  return g ? std::make_shared<const grammar>(std::move(*g)) : nullptr;
}

// Whole-string match: every byte accepted and the grammar complete at the end.
bool matches(const std::shared_ptr<const grammar>& g, std::string_view s) {
  grammar_matcher m(g);
  return m.accept(s) && m.can_end();
}

// Accepted as a prefix (possibly incomplete).
bool allows_prefix(const std::shared_ptr<const grammar>& g, std::string_view s) {
  grammar_matcher m(g);
  return m.accept(s);
}

std::string error_of(std::string_view text) {
  auto g = parse_gbnf(text);
  return g ? "" : g.error();
}

// Groups become rules of their own; their generated names never clash with rules the text defines
// later under any name (the JSON-schema compiler writes names like "args-key-3").
TEST(gbnf, generated_group_rules_never_take_a_name_defined_later) {
  std::string text = "root ::= a\na ::= (\"x\" | \"y\") (\"u\")* a-1\n";
  for (int n = 1; n <= 12; ++n)
    text += "a-" + std::to_string(n) + " ::= \"" + std::to_string(n % 10) + "\"" + (n < 12 ? " a-" + std::to_string(n + 1) : "") + "\n";
  auto g = parsed(text);
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(g, "xuu123456789012"));
  EXPECT_FALSE(matches(g, "xuu12345678901"));
}

TEST(gbnf, literals_alternatives_and_groups) {
  auto g = parsed(R"(root ::= "ab" | "c" ("d" | "e") "\n")");
  EXPECT_TRUE(matches(g, "ab"));
  EXPECT_TRUE(matches(g, "cd\n"));
  EXPECT_TRUE(matches(g, "ce\n"));
  EXPECT_FALSE(matches(g, "cd"));
  EXPECT_FALSE(matches(g, "a"));
  EXPECT_TRUE(allows_prefix(g, "c"));
  EXPECT_FALSE(allows_prefix(g, "x"));
  EXPECT_FALSE(matches(g, "abx"));
}

TEST(gbnf, quantifiers) {
  auto g = parsed("root ::= \"a\"* \"b\"+ \"c\"? [0-9]{2,3} x{2}\nx ::= \"x\"");
  EXPECT_TRUE(matches(g, "b12xx"));
  EXPECT_TRUE(matches(g, "aaabbc123xx"));
  EXPECT_FALSE(matches(g, "12xx"));       // b+ needs one
  EXPECT_FALSE(matches(g, "b1xx"));       // {2,3}
  EXPECT_FALSE(matches(g, "b1234xx"));
  EXPECT_FALSE(matches(g, "b12x"));
  auto open = parsed(R"(root ::= "a"{2,})");
  EXPECT_FALSE(matches(open, "a"));
  EXPECT_TRUE(matches(open, std::string(50, 'a')));
}

TEST(gbnf, classes_ranges_negation_and_utf8) {
  auto g = parsed(R"(root ::= [a-cx] [^a-z] . [é-ë])");
  EXPECT_TRUE(matches(g, "a1zé"));
  EXPECT_TRUE(matches(g, "xZ\xE2\x82\xAC" "ë"));  // € is one character for '.'
  EXPECT_FALSE(matches(g, "ab"));
  EXPECT_FALSE(matches(g, "a1zf"));
  EXPECT_FALSE(matches(g, "d1zé"));
  // A token may end inside a character: its first byte alone is a valid prefix.
  EXPECT_TRUE(allows_prefix(g, "a1z\xC3"));
  EXPECT_FALSE(allows_prefix(g, "a1z\xC3\x80"));  // À is below é
  auto not_quote = parsed(R"(root ::= [^"\\]*)");
  EXPECT_TRUE(matches(not_quote, "hello \xF0\x9F\x98\x80 world"));
  EXPECT_FALSE(matches(not_quote, "a\"b"));
  EXPECT_FALSE(matches(not_quote, "\xFF"));  // never invalid UTF-8
}

TEST(gbnf, escapes_comments_and_multiline_rules) {
  auto g = parsed("# a comment\nroot ::= \"\\x41\\u00e9\\t\" item\n  | \"z\"  # trailing\nitem ::= [\\]\\-]");
  EXPECT_TRUE(matches(g, "A\xC3\xA9\t]"));
  EXPECT_TRUE(matches(g, "A\xC3\xA9\t-"));
  EXPECT_TRUE(matches(g, "z"));
}

TEST(gbnf, recursion_nests_and_tail_recursion_stays_flat) {
  auto g = parsed(R"g(root ::= "(" root ")" | "x")g");
  EXPECT_TRUE(matches(g, "((x))"));
  EXPECT_FALSE(matches(g, "((x)"));
  // A million-byte repetition does not grow the stacks (tail calls).
  auto star = parsed(R"(root ::= ("ab")*)");
  grammar_matcher m(star);
  for (int i = 0; i < 100000; ++i) ASSERT_TRUE(m.accept("ab"));
  EXPECT_TRUE(m.can_end());
  EXPECT_EQ(m.current().size(), 2u);  // "complete" and "inside the loop"
}

TEST(gbnf, prefix_and_suffix_wrap_the_root) {
  auto g = parsed(R"(root ::= [0-9]+)", "<n>", "</n>");
  EXPECT_TRUE(matches(g, "<n>42</n>"));
  EXPECT_FALSE(matches(g, "42"));
  EXPECT_FALSE(matches(g, "<n></n>"));
}

TEST(gbnf, must_end_when_nothing_can_follow) {
  auto g = parsed(R"(root ::= "a" "b"?)");
  grammar_matcher m(g);
  ASSERT_TRUE(m.accept("a"));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.must_end());
  ASSERT_TRUE(m.accept("b"));
  EXPECT_TRUE(m.must_end());
}

TEST(gbnf, errors_name_the_problem_and_where) {
  EXPECT_EQ(error_of("root ::= \"a\"\nfoo ::= bar"), "line 2, column 9: undefined rule 'bar'");
  EXPECT_EQ(error_of("root ::= \"a"), "line 1, column 10: unterminated string literal");
  EXPECT_EQ(error_of("root ::= [a-"), "line 1, column 10: unterminated character class");
  EXPECT_EQ(error_of("root ::= (\"a\""), "line 1, column 10: unclosed '('");
  EXPECT_EQ(error_of("root ::= * \"a\""), "line 1, column 10: '*' has nothing to repeat");
  EXPECT_EQ(error_of("root ::= \"\\q\""), "line 1, column 11: unknown escape '\\q'");
  EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""), "line 2, column 1: rule 'root' defined twice");
  EXPECT_EQ(error_of("other ::= \"a\""), "no rule named 'root'");
  EXPECT_EQ(error_of("root ::= root \"a\" | \"b\""), "left recursion through rule 'root'");
  EXPECT_EQ(error_of("root ::= \"a\"{3,2}"), "line 1, column 13: repetition {m,n} with n < m");
  EXPECT_NE(error_of("root ::= \"a\"{99999}").find("repetition count above"), std::string::npos);
  EXPECT_EQ(error_of(""), "line 1, column 1: empty grammar");
}

TEST(gbnf, hostile_grammars_are_refused_not_crashed_on) {
  EXPECT_NE(error_of("root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')')).find("nested too deep"),
            std::string::npos);
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 60000; ++i) chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " | \"x\"\n";
  chain += "r60000 ::= \"y\"\n";
  EXPECT_EQ(error_of(chain), "grammar too large");
}

}  // namespace
}  // namespace pagedserve::grammar
