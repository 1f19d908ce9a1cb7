// tool_choice "required" and a named function force a call on a random-weight model, which would
// never call a tool by itself: the constrained decoder (sampling_params::format, set by the request
// actor from tool_call_schema) keeps its output a <tool_call> of an offered tool whose arguments
// match that tool's parameters schema. Over the OpenAI API, whole and streamed, and then the full
// round trip: the call is sent back with the tool's answer and the model replies.
// Needs the constrained decoder: registered in tests/CMakeLists.txt once it is merged.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "api/json_writer.hpp"
#include "e2e/qwen3_random_model.hpp"
#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"

namespace pagedserve::e2e {
namespace {

constexpr std::string_view tools =
    R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",)"
    R"("properties":{"city":{"type":"string","maxLength":12}},"required":["city"],"additionalProperties":false}}},)"
    R"({"type":"function","function":{"name":"get_time","parameters":{"type":"object",)"
    R"("properties":{"zone":{"enum":["UTC","CET"]}},"required":["zone"],"additionalProperties":false}}}])";

struct forced_call {
  std::string id, name, arguments, finish_reason;
};

// The one call of a whole chat completion forced by tool_choice, checked against the schema's shape.
forced_call ask_forced(unsigned short port, std::string_view tool_choice, bool stream) {
  const std::string body = R"({"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":)" + std::string(tools) +
                           R"(,"tool_choice":)" + std::string(tool_choice) + R"(,"max_tokens":120,"temperature":0.7,"seed":3)" +
                           (stream ? R"(,"stream":true})" : "}");
  const auto r = http_exchange(port, http_post_bytes("/v1/chat/completions", body), std::chrono::seconds(120));
  EXPECT_TRUE(r && r->status == 200) << (r ? r->body : r.error());
  forced_call out;
  if (!r) return out;
  simdjson::dom::parser parser;
  if (!stream) {
    simdjson::dom::element choice = parser.parse(r->body)["choices"].at(0);
    simdjson::dom::element call = choice["message"]["tool_calls"].at(0);
    out = {std::string(std::string_view(call["id"])), std::string(std::string_view(call["function"]["name"])),
           std::string(std::string_view(call["function"]["arguments"])),
           std::string(std::string_view(choice["finish_reason"]))};
    return out;
  }
  for (const std::string& data : sse_data(r->body)) {
    if (data == "[DONE]") continue;
    simdjson::dom::element choice = parser.parse(data)["choices"].at(0);
    simdjson::dom::element calls;
    if (choice["delta"]["tool_calls"].get(calls) == simdjson::SUCCESS) {
      simdjson::dom::element call = calls.at(0);
      std::string_view s;
      if (call["id"].get(s) == simdjson::SUCCESS) out.id = s;
      if (call["function"]["name"].get(s) == simdjson::SUCCESS) out.name = s;
      if (call["function"]["arguments"].get(s) == simdjson::SUCCESS) out.arguments += s;
    }
    std::string_view reason;
    if (choice["finish_reason"].get(reason) == simdjson::SUCCESS) out.finish_reason = reason;
  }
  return out;
}

void expect_valid(const forced_call& c, std::string_view only_name = {}) {
  EXPECT_TRUE(c.id.starts_with("call_")) << c.id;
  EXPECT_EQ(c.finish_reason, "tool_calls");
  if (!only_name.empty()) {
    EXPECT_EQ(c.name, only_name);
  }
  simdjson::dom::parser parser;
  simdjson::dom::element args;
  ASSERT_EQ(parser.parse(c.arguments).get(args), simdjson::SUCCESS) << c.arguments;
  if (c.name == "get_weather") {
    std::string_view city;
    ASSERT_EQ(args["city"].get(city), simdjson::SUCCESS) << c.arguments;
    EXPECT_LE(city.size(), 12u);
  } else {
    ASSERT_EQ(c.name, "get_time");
    const std::string_view zone(args["zone"]);
    EXPECT_TRUE(zone == "UTC" || zone == "CET") << c.arguments;
  }
}

TEST(tool_choice_forced, required_and_named_force_a_valid_call_then_the_round_trip_completes) {
  const auto model = qwen3_random_model();
  if (model.empty()) GTEST_SKIP() << "the Qwen3 tokenizer is absent";
  server_process server({"--model", model.string(), "--tokenizer", ""}, std::chrono::seconds(60));
  ASSERT_TRUE(server.ready()) << server.error();
  for (const bool stream : {false, true}) {
    expect_valid(ask_forced(server.port(), R"("required")", stream));
    expect_valid(ask_forced(server.port(), R"({"type":"function","function":{"name":"get_time"}})", stream), "get_time");
  }
  const forced_call call = ask_forced(server.port(), R"({"type":"function","function":{"name":"get_weather"}})", false);
  expect_valid(call, "get_weather");
  std::string calls_json = R"([{"id":)";
  json_append_string(calls_json, call.id);
  calls_json += R"(,"type":"function","function":{"name":"get_weather","arguments":)";
  json_append_string(calls_json, call.arguments);
  calls_json += "}}]";
  std::string tool_id;
  json_append_string(tool_id, call.id);
  const std::string body = R"({"messages":[{"role":"user","content":"Weather in Paris?"},)"
                           R"({"role":"assistant","content":null,"tool_calls":)" + calls_json + R"(},)"
                           R"({"role":"tool","tool_call_id":)" + tool_id + R"(,"content":"18C"}],"tools":)" +
                           std::string(tools) + R"(,"max_tokens":8})";
  const auto reply = http_exchange(server.port(), http_post_bytes("/v1/chat/completions", body), std::chrono::seconds(60));
  ASSERT_TRUE(reply && reply->status == 200) << (reply ? reply->body : reply.error());
}

}  // namespace
}  // namespace pagedserve::e2e
