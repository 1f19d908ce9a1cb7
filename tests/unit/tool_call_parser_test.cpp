// The tool-call parser of each template family: calls and content from whole outputs, and the same
// result however the output is split into streamed pieces (every byte boundary, and byte by byte).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat/chat_output_parser.hpp"
#include "chat/tool_call_parser.hpp"

namespace pagedserve {
namespace {

struct parsed {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
  bool operator==(const parsed&) const = default;
};

void add(parsed& p, tool_parse_output o) {
  p.content += o.content;
  for (auto& c : o.calls) p.calls.emplace_back(c.name, c.arguments);
}

parsed parse_pieces(tool_call_family f, const std::vector<std::string>& pieces) {
  tool_call_parser parser(f);
  parsed p;
  for (const auto& piece : pieces) add(p, parser.push(piece));
  add(p, parser.finish());
  return p;
}

parsed parse_whole(tool_call_family f, const std::string& text) { return parse_pieces(f, {text}); }

// Every split into two pieces, and one byte at a time, gives what the whole text gives.
void expect_split_invariant(tool_call_family f, const std::string& text) {
  const parsed whole = parse_whole(f, text);
  for (std::size_t cut = 0; cut <= text.size(); ++cut)
    EXPECT_EQ(parse_pieces(f, {text.substr(0, cut), text.substr(cut)}), whole) << "cut at " << cut << " of: " << text;
  std::vector<std::string> bytes;
  for (const char c : text) bytes.emplace_back(1, c);
  EXPECT_EQ(parse_pieces(f, bytes), whole) << "byte by byte: " << text;
}

using calls = std::vector<std::pair<std::string, std::string>>;

TEST(tool_call_parser, hermes_single_and_parallel_calls) {
  const auto f = tool_call_family::hermes;
  const std::string one = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  EXPECT_EQ(parse_whole(f, one), (parsed{"", calls{{"get_weather", R"({"city":"Paris"})"}}}));
  const std::string two = "Let me check.\n\n" + one +
                          "\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\", \"n\": [1, 2]}}\n</tool_call>\n";
  EXPECT_EQ(parse_whole(f, two),
            (parsed{"Let me check.", calls{{"get_weather", R"({"city":"Paris"})"}, {"get_time", R"({"tz":"CET","n":[1,2]})"}}}));
  expect_split_invariant(f, one);
  expect_split_invariant(f, two);
}

TEST(tool_call_parser, hermes_text_that_is_no_call_stays_content) {
  const auto f = tool_call_family::hermes;
  EXPECT_EQ(parse_whole(f, "a < b and <tool> tags"), (parsed{"a < b and <tool> tags", {}}));
  const std::string broken = "x <tool_call>\n{\"name\": 3}\n</tool_call> y";
  EXPECT_EQ(parse_whole(f, broken), (parsed{broken, {}}));
  // Cut off before its closer (max_tokens): a complete object is still the call, else it is text.
  EXPECT_EQ(parse_whole(f, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}"), (parsed{"", calls{{"f", "{}"}}}));
  EXPECT_EQ(parse_whole(f, "<tool_call>\n{\"name\": \"f\", \"argu"), (parsed{"<tool_call>\n{\"name\": \"f\", \"argu", {}}));
  EXPECT_EQ(parse_whole(f, "ends with <tool_c"), (parsed{"ends with <tool_c", {}}));
  EXPECT_EQ(parse_whole(f, "plain answer\n"), (parsed{"plain answer\n", {}}));  // no calls: spaces kept
  expect_split_invariant(f, broken);
  expect_split_invariant(f, "a < b and <tool> tags <tool_call");
}

TEST(tool_call_parser, hermes_arguments_given_as_a_json_string) {
  EXPECT_EQ(parse_whole(tool_call_family::hermes, R"(<tool_call>{"name":"f","arguments":"{\"a\": 1}"}</tool_call>)"),
            (parsed{"", calls{{"f", R"({"a":1})"}}}));
}

TEST(tool_call_parser, llama3_json_with_and_without_the_python_tag) {
  const auto f = tool_call_family::llama3_json;
  const std::string call = R"({"name": "get_weather", "parameters": {"city": "Oslo"}})";
  EXPECT_EQ(parse_whole(f, call), (parsed{"", calls{{"get_weather", R"({"city":"Oslo"})"}}}));
  EXPECT_EQ(parse_whole(f, "<|python_tag|>" + call), (parsed{"", calls{{"get_weather", R"({"city":"Oslo"})"}}}));
  const std::string two = call + "; " + R"({"name": "f", "parameters": {}})";
  EXPECT_EQ(parse_whole(f, two), (parsed{"", calls{{"get_weather", R"({"city":"Oslo"})"}, {"f", "{}"}}}));
  EXPECT_EQ(parse_whole(f, "The weather is fine."), (parsed{"The weather is fine.", {}}));
  EXPECT_EQ(parse_whole(f, R"({"answer": 42})"), (parsed{R"({"answer": 42})", {}}));  // JSON, but no call
  expect_split_invariant(f, "<|python_tag|>" + call);
  expect_split_invariant(f, two);
  expect_split_invariant(f, "<|python is a snake");
}

TEST(tool_call_parser, mistral_array_after_the_marker) {
  const auto f = tool_call_family::mistral;
  const std::string out = R"(Sure.[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}])";
  EXPECT_EQ(parse_whole(f, out), (parsed{"Sure.", calls{{"a", R"({"x":1})"}, {"b", "{}"}}}));
  EXPECT_EQ(parse_whole(f, "[TOOL_CALLS] not json"), (parsed{"[TOOL_CALLS] not json", {}}));
  EXPECT_EQ(parse_whole(f, "[1, 2] is a list"), (parsed{"[1, 2] is a list", {}}));
  expect_split_invariant(f, out);
  expect_split_invariant(f, "[TOOL_CALLS] not json");
}

TEST(tool_call_parser, no_family_passes_everything_through) {
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
  EXPECT_EQ(parse_whole(tool_call_family::none, text), (parsed{text, {}}));
}

TEST(tool_call_family, detected_from_the_template_text) {
  EXPECT_EQ(tool_call_family_detect("{{ '<tool_call>\\n' }}{{ tool_call.name }}"), tool_call_family::hermes);
  EXPECT_EQ(tool_call_family_detect("{{ '[TOOL_CALLS]' }}"), tool_call_family::mistral);
  EXPECT_EQ(tool_call_family_detect(R"({%- if message.role == "ipython" %}{{ '{"name": "' + tool_call.name + '", "parameters": ' }})"),
            tool_call_family::llama3_json);
  EXPECT_EQ(tool_call_family_detect("{{ message.content }}"), tool_call_family::none);
  EXPECT_EQ(tool_call_markers_of(tool_call_family::hermes).opener, "<tool_call>\n");
}

// Reasoning first, then calls in the answer: a <tool_call> inside the reasoning is no call.
TEST(chat_output_parser, reasoning_then_calls_at_every_split) {
  const std::string out = "<think>\nmaybe <tool_call> here?\n</think>\n\nCalling.<tool_call>\n{\"name\": \"f\", "
                          "\"arguments\": {\"q\": \"</think>\"}}\n</tool_call>";
  auto run = [&](const std::vector<std::string>& pieces) {
    chat_output_parser p(reasoning_syntax::qwen3, false, tool_call_family::hermes);
    chat_output_delta all;
    auto take = [&](chat_output_delta d) {
      all.content += d.content;
      all.reasoning += d.reasoning;
      for (auto& c : d.calls) all.calls.push_back(c);
    };
    for (const auto& piece : pieces) take(p.push(piece));
    take(p.finish());
    return all;
  };
  const chat_output_delta whole = run({out});
  EXPECT_EQ(whole.reasoning, "maybe <tool_call> here?");
  EXPECT_EQ(whole.content, "Calling.");
  ASSERT_EQ(whole.calls.size(), 1u);
  EXPECT_EQ(whole.calls[0].arguments, R"({"q":"</think>"})");
  for (std::size_t cut = 0; cut <= out.size(); ++cut) {
    const chat_output_delta split = run({out.substr(0, cut), out.substr(cut)});
    EXPECT_EQ(split.reasoning, whole.reasoning) << cut;
    EXPECT_EQ(split.content, whole.content) << cut;
    ASSERT_EQ(split.calls.size(), 1u) << cut;
    EXPECT_EQ(split.calls[0].arguments, whole.calls[0].arguments) << cut;
  }
}

}  // namespace
}  // namespace pagedserve
