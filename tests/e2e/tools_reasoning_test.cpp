// Tools and reasoning over real sockets, against a random-weight Qwen3-shaped checkpoint with the real
// Qwen3 tokenizer and chat template (qwen3_random_model.hpp). Random weights never call a tool or
// close a <think> by themselves, so what is checked is what the server controls: the prompt the
// template renders (usage.prompt_tokens), the second half of a tool round trip (assistant tool_calls
// and a tool message sent back), reasoning split off by --reasoning-parser, and clients' extra fields.
// The openai npm client's round trip (tests/e2e/openai/tools_round_trip.mjs) runs from here, as it needs
// this model. Forcing a call (tool_choice required) is tool_choice_forced_test.cpp's.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdlib>

#include "e2e/qwen3_random_model.hpp"
#include "support/child_process.hpp"
#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"
#include "support/ws_client.hpp"

namespace pagedserve::e2e {
namespace {

constexpr std::string_view tools =
    R"([{"type":"function","function":{"name":"get_weather","description":"Current weather of a city",)"
    R"("parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}])";
// The round trip's second half: the question, the model's call, the tool's answer.
constexpr std::string_view round_trip_messages =
    R"([{"role":"user","content":"What is the weather in Paris?"},)"
    R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",)"
    R"("function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},)"
    R"({"role":"tool","tool_call_id":"call_1","content":"18C and sunny"}])";

class tools_reasoning : public testing::Test {
 protected:
  void SetUp() override {
    model_ = qwen3_random_model();
    if (model_.empty()) GTEST_SKIP() << "the Qwen3 tokenizer (tests/data/models/tokenizers/qwen3) is absent";
  }
  server_process serve(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--model", model_.string(), "--tokenizer", ""};
    args.insert(args.end(), extra.begin(), extra.end());
    return server_process(args, std::chrono::seconds(60));
  }
  std::filesystem::path model_;
};

raw_response post_chat(unsigned short port, const std::string& body, http_conn* conn = nullptr) {
  http_conn own;
  http_conn& c = conn ? *conn : own;
  if (!conn) EXPECT_TRUE(c.connect(port));
  EXPECT_TRUE(c.send(http_post_bytes("/v1/chat/completions", body)));
  auto r = c.read_response(std::chrono::seconds(60));
  EXPECT_TRUE(r) << (r ? "" : r.error());
  return r ? *r : raw_response{};
}

std::int64_t prompt_tokens(const raw_response& r) {
  simdjson::dom::parser parser;
  std::int64_t n = -1;
  EXPECT_EQ(parser.parse(r.body)["usage"]["prompt_tokens"].get(n), simdjson::SUCCESS) << r.body;
  return n;
}

std::string rtrim(std::string s) {
  while (!s.empty() && std::string_view(" \n\t\r").find(s.back()) != std::string_view::npos) s.pop_back();
  return s;
}

TEST_F(tools_reasoning, enable_thinking_reaches_the_qwen3_template) {
  auto server = serve();
  ASSERT_TRUE(server.ready()) << server.error();
  auto ask = [&](std::string_view kwargs) {
    return prompt_tokens(post_chat(server.port(), R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":1,)"
                                                  R"("temperature":0,"chat_template_kwargs":)" + std::string(kwargs) + "}"));
  };
  const std::int64_t on = ask(R"({"enable_thinking":true})"), off = ask(R"({"enable_thinking":false})");
  // Thinking off: the template adds the empty block <think>, "\n\n", </think>, "\n\n" (four tokens).
  EXPECT_EQ(off, on + 4) << "on " << on << ", off " << off;
}

TEST_F(tools_reasoning, a_tool_answer_is_rendered_and_answered_streaming_or_not) {
  auto server = serve();
  ASSERT_TRUE(server.ready()) << server.error();
  const std::string base = R"({"messages":)" + std::string(round_trip_messages) + R"(,"max_tokens":4,"temperature":0)";
  const raw_response with_tools = post_chat(server.port(), base + R"(,"tools":)" + std::string(tools) + "}");
  ASSERT_EQ(with_tools.status, 200) << with_tools.body;
  const raw_response tools_none =
      post_chat(server.port(), base + R"(,"tools":)" + std::string(tools) + R"(,"tool_choice":"none"})");
  ASSERT_EQ(tools_none.status, 200) << tools_none.body;
  const raw_response no_tools = post_chat(server.port(), base + "}");
  // The tools' system block is rendered unless tool_choice is none.
  EXPECT_GT(prompt_tokens(with_tools), prompt_tokens(no_tools) + 20);
  EXPECT_EQ(prompt_tokens(tools_none), prompt_tokens(no_tools));
  simdjson::dom::parser parser;
  simdjson::dom::element choice = parser.parse(with_tools.body)["choices"].at(0);
  EXPECT_EQ(std::string_view(choice["message"]["role"]), "assistant");
  const std::string whole_content(std::string_view(choice["message"]["content"].get_string().value_unsafe()));

  const raw_response streamed =
      post_chat(server.port(), base + R"(,"tools":)" + std::string(tools) + R"(,"stream":true})");
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  std::string content;
  for (const std::string& data : sse_data(streamed.body)) {
    if (data == "[DONE]") continue;
    simdjson::dom::element delta = parser.parse(data)["choices"].at(0)["delta"];
    std::string_view piece;
    if (delta["content"].get(piece) == simdjson::SUCCESS) content += piece;
  }
  EXPECT_EQ(content, whole_content);
}

// --reasoning-parser deepseek_r1: output is reasoning until </think>, which random weights never
// write, so the whole greedy output moves from content (parser none) to reasoning_content, streamed
// or not, and to the "reasoning" of WebSocket frames.
TEST_F(tools_reasoning, reasoning_parser_moves_output_into_reasoning_content) {
  const std::string body = R"({"messages":[{"role":"user","content":"Think about it"}],"max_tokens":12,"temperature":0)";
  std::string plain;
  {
    auto none = serve({"--reasoning-parser", "none"});
    ASSERT_TRUE(none.ready()) << none.error();
    const raw_response r = post_chat(none.port(), body + "}");
    simdjson::dom::parser parser;
    plain = std::string(std::string_view(parser.parse(r.body)["choices"].at(0)["message"]["content"]));
  }
  ASSERT_FALSE(rtrim(plain).empty());
  auto r1 = serve({"--reasoning-parser", "deepseek_r1"});
  ASSERT_TRUE(r1.ready()) << r1.error();
  simdjson::dom::parser parser;
  const raw_response whole = post_chat(r1.port(), body + "}");
  simdjson::dom::element message = parser.parse(whole.body)["choices"].at(0)["message"];
  EXPECT_EQ(std::string_view(message["reasoning_content"]), rtrim(plain)) << whole.body;
  EXPECT_TRUE(message["content"].is_null()) << whole.body;

  const raw_response streamed = post_chat(r1.port(), body + R"(,"stream":true})");
  std::string reasoning, content;
  for (const std::string& data : sse_data(streamed.body)) {
    if (data == "[DONE]") continue;
    simdjson::dom::element delta = parser.parse(data)["choices"].at(0)["delta"];
    std::string_view piece;
    if (delta["reasoning_content"].get(piece) == simdjson::SUCCESS) reasoning += piece;
    if (delta["content"].get(piece) == simdjson::SUCCESS) content += piece;
  }
  EXPECT_EQ(reasoning, rtrim(plain));
  EXPECT_EQ(content, "");

  ws_client ws;
  ASSERT_TRUE(ws.connect(r1.port()));
  ASSERT_TRUE(ws.send_text(R"({"type":"generate","id":"w","messages":[{"role":"user","content":"Think about it"}],)"
                           R"("params":{"max_tokens":12,"temperature":0},"cache_prompt":true})"));
  std::string frames_reasoning;
  for (;;) {
    auto f = ws.read(std::chrono::seconds(30));
    ASSERT_TRUE(f) << f.error();
    simdjson::dom::element e = parser.parse(f->payload);
    const std::string_view type(e["type"]);
    std::string_view piece;
    if (type == "token") {
      if (e["reasoning"].get(piece) == simdjson::SUCCESS) frames_reasoning += piece;
      if (e["text"].get(piece) == simdjson::SUCCESS) EXPECT_EQ(piece, "") << f->payload;
      continue;
    }
    ASSERT_EQ(type, "done") << f->payload;
    EXPECT_EQ(std::string_view(e["reasoning"]), rtrim(plain));
    EXPECT_EQ(simdjson::minify(e["ignored_fields"]), R"(["cache_prompt"])");
    break;
  }
  EXPECT_EQ(frames_reasoning, rtrim(plain));
}

// Fields of other servers: answered, named in X-Ignored-Fields on every response, and logged once
// per connection, not once per request.
TEST_F(tools_reasoning, extra_fields_are_ignored_named_and_logged_once) {
  auto server = serve();
  ASSERT_TRUE(server.ready()) << server.error();
  http_conn c;
  ASSERT_TRUE(c.connect(server.port()));
  const std::string body =
      R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":1,"cache_prompt":true,"samplers":["top_k"]})";
  for (int i = 0; i < 3; ++i) {
    const raw_response r = post_chat(server.port(), body, &c);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("x-ignored-fields"), "cache_prompt, samplers");
  }
  const raw_response bad = post_chat(server.port(), R"({"messages":[{"role":"user","content":"Hi"}],"cache_prompt":true,"top_p":5})", &c);
  EXPECT_EQ(bad.status, 400);
  const std::string log = server.log();
  const std::string warning = "ignores: cache_prompt, samplers";
  const auto first = log.find(warning);
  EXPECT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find(warning, first + 1), std::string::npos) << log;
}

// The official openai npm client against this model: a tool round trip's second half, streaming and
// not (tests/e2e/openai/tools_round_trip.mjs), when node and the client (npm ci in tests/e2e/openai) are here.
TEST_F(tools_reasoning, openai_npm_client_round_trip) {
  const std::filesystem::path dir = std::filesystem::path(PAGEDSERVE_SOURCE_DIR) / "tests/e2e/openai";
  if (!std::filesystem::exists(dir / "node_modules/openai"))
    GTEST_SKIP() << "the openai npm client is not installed (npm ci --prefix tests/e2e/openai): skipping";
  const auto r = run_process({"/usr/bin/env", "PAGEDSERVE_QWEN3_MODEL=" + model_.string(),
                              "PAGEDSERVE_BINARY=" + test::server_binary().string(), "node", "--test",
                              (dir / "tools_round_trip.mjs").string()},
                             std::chrono::seconds(120));
  ASSERT_TRUE(r.exited) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("# SKIP"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace pagedserve::e2e
