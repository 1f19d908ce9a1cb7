// Structured output end to end over real sockets: response_format json_schema on chat and
// completions, streaming and not, gives JSON of the schema's shape that ends with finish_reason
// "stop"; json_object gives an object; an unsupported schema keyword is a 400 naming it.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"

namespace pagedserve::e2e {
namespace {

constexpr auto response_timeout = std::chrono::seconds(60);

constexpr const char* person_format = R"("response_format":{"type":"json_schema","json_schema":{"name":"person",
  "strict":true,"schema":{"type":"object","properties":{"name":{"type":"string","maxLength":12},
  "age":{"type":"integer","minimum":0,"maximum":120},"pet":{"enum":["cat","dog",null]}},
  "required":["name","age","pet"],"additionalProperties":false}}})";

raw_response post(unsigned short port, const std::string& path, const std::string& body) {
  auto r = http_exchange(port, http_post_bytes(path, body), response_timeout);
  EXPECT_TRUE(r) << r.error();
  return r ? *r : raw_response{};
}

// The generated text and finish reason of choice 0, from a response or from a stream's chunks.
std::pair<std::string, std::string> output_of(const raw_response& r, bool chat, bool stream) {
  simdjson::dom::parser parser;
  std::string text, finish;
  auto take = [&](const std::string& json) {
    simdjson::dom::element choice;
    if (parser.parse(json)["choices"].at(0).get(choice) != simdjson::SUCCESS) return;
    std::string_view piece, reason;
    simdjson::dom::element holder = choice;
    if (chat && choice[stream ? "delta" : "message"].get(holder) != simdjson::SUCCESS) return;
    if (holder[chat ? "content" : "text"].get(piece) == simdjson::SUCCESS) text += piece;
    if (choice["finish_reason"].get(reason) == simdjson::SUCCESS) finish = reason;
  };
  if (!stream) {
    take(r.body);
  } else {
    for (const std::string& data : sse_data(r.body))
      if (data != "[DONE]") take(data);
  }
  return {text, finish};
}

// The person object: its fields have the schema's types and bounds.
void expect_person(const std::string& text) {
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  ASSERT_EQ(parser.parse(text).get(o), simdjson::SUCCESS) << text;
  std::string_view name;
  std::int64_t age = -1;
  ASSERT_EQ(o["name"].get(name), simdjson::SUCCESS) << text;
  ASSERT_EQ(o["age"].get(age), simdjson::SUCCESS) << text;
  EXPECT_GE(age, 0);
  EXPECT_LE(age, 120);
  ASSERT_FALSE(o["pet"].error()) << text;
  EXPECT_EQ(o.size(), 3u) << text;
}

TEST(structured_output, json_schema_on_chat_and_completions_streaming_and_not) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  PAGEDSERVE_REQUIRE_DATA(tokenizer_path());
  server_process server;
  ASSERT_TRUE(server.ready()) << server.error();
  for (bool chat : {true, false})
    for (bool stream : {false, true})
      for (const char* temperature : {"0", "1"}) {
        SCOPED_TRACE(std::string(chat ? "chat" : "completions") + (stream ? " stream" : "") + " temperature " + temperature);
        const std::string input = chat ? R"("messages":[{"role":"user","content":"Tell me about Lily."}])"
                                       : R"("prompt":"Lily's record:")";
        const std::string body = "{" + input + "," + person_format + ",\"max_tokens\":300,\"seed\":3,\"temperature\":" +
                                 temperature + (stream ? ",\"stream\":true}" : "}");
        const raw_response r = post(server.port(), chat ? "/v1/chat/completions" : "/v1/completions", body);
        ASSERT_EQ(r.status, 200) << r.body;
        const auto [text, finish] = output_of(r, chat, stream);
        EXPECT_EQ(finish, "stop") << text;
        expect_person(text);
      }
}

TEST(structured_output, json_object_and_choice) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  PAGEDSERVE_REQUIRE_DATA(tokenizer_path());
  server_process server;
  ASSERT_TRUE(server.ready()) << server.error();
  const raw_response r = post(server.port(), "/v1/completions",
                              R"({"prompt":"Once","response_format":{"type":"json_object"},"max_tokens":40,"temperature":0})");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto [text, finish] = output_of(r, false, false);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text[0], '{') << text;  // an object, possibly cut by max_tokens
  const raw_response choice = post(server.port(), "/v1/completions",
                                   R"({"prompt":"Once","guided_choice":["happy","sad"],"max_tokens":20})");
  ASSERT_EQ(choice.status, 200) << choice.body;
  const auto [picked, why] = output_of(choice, false, false);
  EXPECT_TRUE(picked == "happy" || picked == "sad") << picked;
  EXPECT_EQ(why, "stop");
}

TEST(structured_output, unsupported_keyword_is_a_400_naming_it) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  PAGEDSERVE_REQUIRE_DATA(tokenizer_path());
  server_process server;
  ASSERT_TRUE(server.ready()) << server.error();
  const raw_response r = post(server.port(), "/v1/chat/completions",
                              R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema",)"
                              R"("json_schema":{"name":"n","schema":{"type":"object","patternProperties":{"^a":{}}}}}})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("patternProperties"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"param\":\"response_format\""), std::string::npos) << r.body;
}

}  // namespace
}  // namespace pagedserve::e2e
