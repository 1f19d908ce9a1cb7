// Tools and reasoning on the OpenAI API: tools, tool_choice, parallel_tool_calls,
// chat_template_kwargs and the tool role read from chat requests; tool_calls and reasoning_content
// written in responses and in stream chunks as OpenAI streams them; the X-Ignored-Fields value.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "api/openai_request.hpp"
#include "api/openai_response.hpp"

namespace pagedserve::openai {
namespace {

const parse_limits limits{512, 4, 8};
constexpr std::string_view tools =
    R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])";

std::expected<generation_request, api_error> chat(std::string_view rest) {
  return parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],)" + std::string(rest) + "}", limits);
}

TEST(openai_tools, tools_and_tool_choice_are_read) {
  auto r = chat(std::string(tools) + R"(,"tool_choice":{"type":"function","function":{"name":"get_weather"}},)"
                R"("parallel_tool_calls":false,"chat_template_kwargs":{"enable_thinking":false},"reasoning_effort":"low")");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->chat.tool_choice, tool_choice_mode::named);
  EXPECT_EQ(r->chat.tool_choice_name, "get_weather");
  EXPECT_FALSE(r->chat.parallel_tool_calls);
  EXPECT_EQ(r->chat.template_kwargs_json, R"({"enable_thinking":false})");
  EXPECT_EQ(r->chat.reasoning_effort, "low");
  simdjson::dom::parser parser;
  EXPECT_EQ(std::string_view(parser.parse(r->chat.tools_json).at(0)["function"]["name"]), "get_weather");
  for (const auto& [choice, mode] : {std::pair{"auto", tool_choice_mode::automatic}, {"none", tool_choice_mode::none},
                                     {"required", tool_choice_mode::required}}) {
    auto c = chat(std::string(tools) + R"(,"tool_choice":")" + choice + "\"");
    ASSERT_TRUE(c) << choice;
    EXPECT_EQ(c->chat.tool_choice, mode);
  }
}

TEST(openai_tools, bad_tools_are_400s) {
  EXPECT_EQ(chat(R"("tools":{})").error().param, "tools");
  EXPECT_EQ(chat(R"("tools":[{"type":"function","function":{"name":""}}])").error().param, "tools[].function.name");
  EXPECT_EQ(chat(R"("tools":[{"type":"retrieval"}])").error().param, "tools");
  EXPECT_EQ(chat(R"("tool_choice":"always")").error().param, "tool_choice");
  EXPECT_EQ(chat(R"("tool_choice":"required")").error().param, "tool_choice");  // no tools
  EXPECT_EQ(chat(std::string(tools) + R"(,"tool_choice":{"type":"function","function":{"name":"other"}})").error().param,
            "tool_choice");
  EXPECT_EQ(chat(R"("chat_template_kwargs":[1])").error().param, "chat_template_kwargs");
  EXPECT_EQ(chat(R"("parallel_tool_calls":"yes")").error().param, "parallel_tool_calls");
}

TEST(openai_tools, a_tool_round_trip_in_messages) {
  auto r = parse_chat_request(
      R"({"messages":[{"role":"user","content":"weather?"},)"
      R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",)"
      R"("function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},)"
      R"({"role":"tool","tool_call_id":"call_1","content":"18C"}]})",
      limits);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->messages.size(), 3u);
  EXPECT_EQ(r->messages[1].content, "");
  EXPECT_NE(r->messages[1].tool_calls_json.find("get_weather"), std::string::npos);
  EXPECT_EQ(r->messages[2].role, "tool");
  EXPECT_EQ(r->messages[2].tool_call_id, "call_1");
  // Only assistants call tools; a message needs content or calls.
  EXPECT_FALSE(parse_chat_request(R"({"messages":[{"role":"user","content":"x","tool_calls":[]}]})", limits));
  EXPECT_FALSE(parse_chat_request(R"({"messages":[{"role":"assistant","content":null}]})", limits));
}

response_meta chat_meta() { return {endpoint::chat_completions, "id-1", 1700000000, "m"}; }

TEST(openai_tools, a_response_with_calls_and_reasoning) {
  choice_piece c;
  c.reasoning = "thinking";
  c.tool_calls.push_back({0, "call_abc", "get_weather", R"({"city":"Paris"})"});
  c.finish_reason = "tool_calls";
  const std::string body = encode_response(chat_meta(), {c}, {5, 7}, {});
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  ASSERT_EQ(parser.parse(body).get(e), simdjson::SUCCESS) << body;
  simdjson::dom::element m = e["choices"].at(0)["message"];
  EXPECT_TRUE(m["content"].is_null());
  EXPECT_EQ(std::string_view(m["reasoning_content"]), "thinking");
  EXPECT_EQ(std::string_view(m["tool_calls"].at(0)["id"]), "call_abc");
  EXPECT_EQ(std::string_view(m["tool_calls"].at(0)["type"]), "function");
  EXPECT_EQ(std::string_view(m["tool_calls"].at(0)["function"]["arguments"]), R"({"city":"Paris"})");
  EXPECT_EQ(std::string_view(e["choices"].at(0)["finish_reason"]), "tool_calls");
}

TEST(openai_tools, stream_deltas_as_openai_sends_them) {
  simdjson::dom::parser parser;
  choice_piece head;
  head.tool_calls.push_back({1, "call_x", "f", ""});
  const std::string a = encode_chunk(chat_meta(), head, {});
  simdjson::dom::element d = parser.parse(a)["choices"].at(0)["delta"];
  EXPECT_EQ(int64_t(d["tool_calls"].at(0)["index"]), 1);
  EXPECT_EQ(std::string_view(d["tool_calls"].at(0)["function"]["name"]), "f");
  EXPECT_EQ(std::string_view(d["tool_calls"].at(0)["function"]["arguments"]), "");
  choice_piece args;
  args.tool_calls.push_back({1, "", "", R"({"a":1})"});
  const std::string b = encode_chunk(chat_meta(), args, {});
  d = parser.parse(b)["choices"].at(0)["delta"];
  EXPECT_EQ(d["tool_calls"].at(0)["id"].error(), simdjson::NO_SUCH_FIELD) << b;
  EXPECT_EQ(std::string_view(d["tool_calls"].at(0)["function"]["arguments"]), R"({"a":1})");
  choice_piece thought;
  thought.reasoning = "hmm";
  d = parser.parse(encode_chunk(chat_meta(), thought, {}))["choices"].at(0)["delta"];
  EXPECT_EQ(std::string_view(d["reasoning_content"]), "hmm");
  choice_piece text;
  text.text = "hi";
  d = parser.parse(encode_chunk(chat_meta(), text, {}))["choices"].at(0)["delta"];
  EXPECT_EQ(std::string_view(d["content"]), "hi");
  EXPECT_EQ(d["reasoning_content"].error(), simdjson::NO_SUCH_FIELD);
}

TEST(openai_tools, ignored_fields_header_is_safe_header_text) {
  EXPECT_EQ(ignored_fields_header({"cache_prompt", "samplers"}), "cache_prompt, samplers");
  EXPECT_EQ(ignored_fields_header({"evil\r\nSet-Cookie: x"}), "evil??Set-Cookie:?x");
  std::vector<std::string> many(20, "f");
  EXPECT_TRUE(ignored_fields_header(many).ends_with(", ...")) << ignored_fields_header(many);
  EXPECT_EQ(ignored_fields_header({std::string(100, 'a')}).size(), 64u);
}

}  // namespace
}  // namespace pagedserve::openai
