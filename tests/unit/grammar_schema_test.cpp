// The JSON Schema, regex and integer-range compilers: strings each schema or pattern accepts and
// refuses, and the errors that name an unsupported keyword.
#include <gtest/gtest.h>

#include "grammar/integer_range.hpp"
#include "unit/grammar_test_helpers.hpp"

namespace pagedserve::grammar {
namespace {

using grammar_test::compile_error;
using grammar_test::compiled;
using grammar_test::matches;
using kind = output_format::kind;

TEST(json_schema, object_with_required_and_optional_properties) {
  auto g = compiled(kind::json_schema, R"({"type":"object","properties":{"a":{"type":"integer"},
    "b":{"type":"string"},"c":{"type":"boolean"}},"required":["b"],"additionalProperties":false})");
  EXPECT_TRUE(matches(g, R"({"b":"x"})"));
  EXPECT_TRUE(matches(g, R"({"b": "x", "a": -12, "c": true})"));
  EXPECT_TRUE(matches(g, "{\n  \"b\": \"x\",\n  \"c\": false\n}"));
  EXPECT_FALSE(matches(g, R"({"a":1})"));          // b required
  EXPECT_FALSE(matches(g, R"({"b":"x","d":1})"));  // no additional properties
  EXPECT_FALSE(matches(g, R"({"b":"x",})"));
  EXPECT_FALSE(matches(g, R"({"b":1})"));
  EXPECT_FALSE(matches(g, "{" + std::string(40, ' ') + "\"b\":\"x\"}"));  // whitespace is bounded
}

TEST(json_schema, additional_properties_and_no_required) {
  auto open = compiled(kind::json_schema, R"({"type":"object","properties":{"a":{"type":"null"}},
    "additionalProperties":{"type":"number"}})");
  EXPECT_TRUE(matches(open, "{}"));
  EXPECT_TRUE(matches(open, R"({"a":null,"x":1.5,"y":2e3})"));
  EXPECT_TRUE(matches(open, R"({"x":1})"));
  EXPECT_FALSE(matches(open, R"({"x":"s"})"));
  auto none = compiled(kind::json_schema, R"({"type":"object","properties":{"a":{"const":1},"b":{"const":2}}, "additionalProperties":false})");
  EXPECT_TRUE(matches(none, "{}"));
  EXPECT_TRUE(matches(none, R"({"b":2})"));
  EXPECT_TRUE(matches(none, R"({"a":1,"b":2})"));
  EXPECT_FALSE(matches(none, R"({"a":1,})"));
  EXPECT_FALSE(matches(none, R"({,"b":2})"));
}

TEST(json_schema, additional_keys_never_repeat_declared_ones) {
  auto g = compiled(kind::json_schema, R"({"type":"object","properties":{"a":{"type":"integer"},"ab":{"type":"null"}}})");
  EXPECT_TRUE(matches(g, R"({"a":1,"b":"x","abc":[],"":0,"é":1})"));
  EXPECT_FALSE(matches(g, R"({"\u0061":1})"));  // extra keys are written without escapes
  EXPECT_TRUE(matches(g, R"({"zz":1})"));
  EXPECT_FALSE(matches(g, R"({"a":1,"a":"x"})"));
  EXPECT_FALSE(matches(g, R"({"ab":"x"})"));
  EXPECT_FALSE(matches(g, R"({"a":"x"})"));
}

TEST(json_schema, arrays_enums_and_unions) {
  auto g = compiled(kind::json_schema, R"({"type":"array","items":{"enum":["x",1,null]},"minItems":1,"maxItems":3})");
  EXPECT_TRUE(matches(g, R"(["x"])"));
  EXPECT_TRUE(matches(g, R"(["x", 1, null])"));
  EXPECT_FALSE(matches(g, "[]"));
  EXPECT_FALSE(matches(g, R"(["x",1,null,1])"));
  EXPECT_FALSE(matches(g, R"(["y"])"));
  auto tuple = compiled(kind::json_schema, R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false})");
  EXPECT_TRUE(matches(tuple, R"(["a",1])"));
  EXPECT_FALSE(matches(tuple, R"(["a",1,2])"));
  auto any = compiled(kind::json_schema, R"({"anyOf":[{"type":"string","maxLength":2},{"type":["integer","null"]}]})");
  EXPECT_TRUE(matches(any, R"("ab")"));
  EXPECT_TRUE(matches(any, "7"));
  EXPECT_TRUE(matches(any, "null"));
  EXPECT_FALSE(matches(any, R"("abc")"));
  EXPECT_FALSE(matches(any, "1.5"));
}

// oneOf is generated as anyOf only where no value can match two alternatives: a value matching two
// is invalid under oneOf. Exclusive by type, or by a required const/enum discriminator (through $ref).
TEST(json_schema, one_of_only_where_its_alternatives_exclude_each_other) {
  auto by_type = compiled(kind::json_schema, R"({"oneOf":[{"type":"string","maxLength":2},{"type":"integer"}]})");
  EXPECT_TRUE(matches(by_type, R"("ab")"));
  EXPECT_TRUE(matches(by_type, "7"));
  auto tagged = compiled(kind::json_schema, R"({"oneOf":[{"$ref":"#/$defs/cat"},{"$ref":"#/$defs/dog"}],"$defs":{
    "cat":{"type":"object","properties":{"kind":{"const":"cat"},"lives":{"type":"integer"}},"required":["kind"],"additionalProperties":false},
    "dog":{"type":"object","properties":{"kind":{"enum":["dog","puppy"]},"lives":{"type":"integer"}},"required":["kind"],"additionalProperties":false}}})");
  EXPECT_TRUE(matches(tagged, R"({"kind":"cat","lives":9})"));
  EXPECT_TRUE(matches(tagged, R"({"kind":"puppy"})"));
  EXPECT_FALSE(matches(tagged, R"({"kind":"cow"})"));
  for (const char* overlapping : {
           R"({"oneOf":[{"type":"integer"},{"type":"number"}]})",              // 1 is both
           R"({"oneOf":[{"type":"string"},{"maxLength":3}]})",                 // the second says no type
           R"({"oneOf":[{"type":"object","properties":{"k":{"const":1}},"required":["k"]},
                        {"type":"object","properties":{"k":{"enum":[1,2]}},"required":["k"]}]})",
           R"({"oneOf":[{"type":"object","properties":{"k":{"const":1}}},
                        {"type":"object","properties":{"k":{"const":2}}}]})"})  // k not required: {} is both
    EXPECT_NE(compile_error(kind::json_schema, overlapping).find("'oneOf' whose alternatives may overlap"), std::string::npos)
        << overlapping;
}

TEST(json_schema, refs_recursion_and_all_of) {
  auto g = compiled(kind::json_schema, R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object",
    "properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},
    "required":["v","next"],"additionalProperties":false}}})");
  EXPECT_TRUE(matches(g, R"({"v":1,"next":{"v":2,"next":null}})"));
  EXPECT_FALSE(matches(g, R"({"v":1,"next":{"v":2}})"));
  auto all = compiled(kind::json_schema, R"({"allOf":[{"properties":{"a":{"type":"integer"}},"required":["a"]},
    {"properties":{"b":{"type":"string"}},"required":["b"]}],"additionalProperties":false})");
  EXPECT_TRUE(matches(all, R"({"a":1,"b":"x"})"));
  EXPECT_FALSE(matches(all, R"({"a":1})"));
}

TEST(json_schema, strings_lengths_patterns_formats) {
  auto g = compiled(kind::json_schema, R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_TRUE(matches(g, R"("ab")"));
  EXPECT_TRUE(matches(g, R"("a\"\u00e9")"));
  EXPECT_FALSE(matches(g, R"("a")"));
  EXPECT_FALSE(matches(g, R"("abcd")"));
  auto p = compiled(kind::json_schema, R"({"type":"string","pattern":"^[A-Z]{2}-\\d+$"})");
  EXPECT_TRUE(matches(p, R"("AB-12")"));
  EXPECT_FALSE(matches(p, R"("Ab-12")"));
  auto date = compiled(kind::json_schema, R"({"type":"string","format":"date-time"})");
  EXPECT_TRUE(matches(date, R"("2024-02-29T12:30:00Z")"));
  EXPECT_FALSE(matches(date, R"("2024-13-01T00:00:00Z")"));
  auto uuid = compiled(kind::json_schema, R"({"type":"string","format":"uuid"})");
  EXPECT_TRUE(matches(uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
}

TEST(json_schema, integer_bounds) {
  auto g = compiled(kind::json_schema, R"({"type":"integer","minimum":-15,"maximum":127})");
  for (int v = -40; v <= 300; ++v) EXPECT_EQ(matches(g, std::to_string(v)), v >= -15 && v <= 127) << v;
  EXPECT_FALSE(matches(g, "007"));
  EXPECT_FALSE(matches(g, "-0"));
  auto at_least = compiled(kind::json_schema, R"({"type":"integer","exclusiveMinimum":18})");
  EXPECT_FALSE(matches(at_least, "18"));
  EXPECT_TRUE(matches(at_least, "19"));
  EXPECT_TRUE(matches(at_least, "123456"));
  EXPECT_FALSE(matches(at_least, "-20"));
  auto non_negative = compiled(kind::json_schema, R"({"type":"number","minimum":0})");
  EXPECT_TRUE(matches(non_negative, "0.5"));
  EXPECT_FALSE(matches(non_negative, "-0.5"));
}

TEST(json_schema, unsupported_keywords_are_named) {
  EXPECT_EQ(compile_error(kind::json_schema, R"({"type":"object","not":{}})"), "unsupported JSON schema keyword 'not'");
  EXPECT_EQ(compile_error(kind::json_schema, R"({"type":"array","uniqueItems":true})"),
            "unsupported JSON schema keyword 'uniqueItems'");
  EXPECT_EQ(compile_error(kind::json_schema, R"({"type":"string","format":"email"})"), "unsupported JSON schema format 'email'");
  EXPECT_NE(compile_error(kind::json_schema, R"({"type":"number","minimum":3})").find("'minimum'"), std::string::npos);
  EXPECT_NE(compile_error(kind::json_schema, R"({"type":"objekt"})").find("unknown type 'objekt'"), std::string::npos);
  EXPECT_NE(compile_error(kind::json_schema, R"({"$ref":"http://x/y"})").find("$ref"), std::string::npos);
  EXPECT_NE(compile_error(kind::json_schema, "{not json").find("not valid JSON"), std::string::npos);
}

TEST(json_object, any_object) {
  auto g = compiled(kind::json_object, "");
  EXPECT_TRUE(matches(g, R"({"a":[1,2,{"b":null}],"c":"\n"})"));
  EXPECT_TRUE(matches(g, "{}"));
  EXPECT_FALSE(matches(g, "[]"));
  EXPECT_FALSE(matches(g, R"({"a":01})"));
}

TEST(regex, ecmascript_subset) {
  auto g = compiled(kind::regex, R"(^(?:ab|c+)\d{2}[^x-z]?\.$)");
  EXPECT_TRUE(matches(g, "ab12."));
  EXPECT_TRUE(matches(g, "ccc34a."));
  EXPECT_FALSE(matches(g, "ab12x."));
  EXPECT_FALSE(matches(g, "ab1."));
  auto words = compiled(kind::regex, R"((\w+)\s(\w+)?)");
  EXPECT_TRUE(matches(words, "hello world"));
  EXPECT_TRUE(matches(words, "hello "));
  // \s is ECMAScript's: Unicode spaces too (U+200A hair space, U+3000), so [^\s] refuses them.
  auto spaces = compiled(kind::regex, R"(a\sb)");
  EXPECT_TRUE(matches(spaces, "a\xE2\x80\x8A" "b"));
  EXPECT_TRUE(matches(spaces, "a\xE3\x80\x80" "b"));
  auto no_space = compiled(kind::regex, R"([^\s]+)");
  EXPECT_FALSE(matches(no_space, "p5.\xE2\x80\x8A" "Qg"));
  EXPECT_TRUE(matches(no_space, "p5.Qg"));
  auto dot = compiled(kind::regex, "a.*b");
  EXPECT_TRUE(matches(dot, "a\xC3\xA9zb"));
  EXPECT_FALSE(matches(dot, "a\nb"));
  EXPECT_NE(compile_error(kind::regex, "(?=a)b").find("lookaround"), std::string::npos);
  EXPECT_NE(compile_error(kind::regex, R"((a)\1)").find("backreferences"), std::string::npos);
  EXPECT_NE(compile_error(kind::regex, "a)").find("unbalanced"), std::string::npos);
}

TEST(integer_range, every_value_in_small_windows) {
  for (auto [lo, hi] : {std::pair{0LL, 9LL}, {5LL, 1234LL}, {-999LL, -10LL}, {-7LL, 7LL}, {99LL, 100LL}}) {
    auto body = integer_range_gbnf(lo, hi);
    ASSERT_TRUE(body);
    auto g = compiled(kind::grammar, "root ::= " + *body);
    for (long long v = lo - 30; v <= hi + 30; ++v)
      EXPECT_EQ(matches(g, std::to_string(v)), v >= lo && v <= hi) << v << " in [" << lo << "," << hi << "]";
  }
}

}  // namespace
}  // namespace pagedserve::grammar
