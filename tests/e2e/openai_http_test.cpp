// End-to-end tests of the OpenAI-compatible HTTP API against the real binary over real sockets:
// /metrics counters move by exactly what was sent, keep-alive with pipelined requests, the error
// statuses (400, 401, 404, 405, 413) in OpenAI's error shape, CORS preflight, and the WebSocket
// upgrade behind the API key. Admission and disconnects are in openai_admission_test.cpp.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"

namespace pagedserve::e2e {
namespace {

constexpr auto response_timeout = std::chrono::seconds(30);

#define OPENAI_REQUIRE_MODEL()                   \
  do {                                           \
    PAGEDSERVE_REQUIRE_DATA(model_path());     \
    PAGEDSERVE_REQUIRE_DATA(tokenizer_path()); \
  } while (0)

std::string series(const std::string& name, const std::string& label = {}) {
  return name + "{model_name=\"stories260K\",replica=\"e2e\"" + (label.empty() ? "" : "," + label) + "}";
}

std::map<std::string, double> scrape(unsigned short port) {
  http_conn c;
  EXPECT_TRUE(c.connect(port));
  EXPECT_TRUE(c.send(http_get_bytes("/metrics")));
  auto r = c.read_response(response_timeout);
  EXPECT_TRUE(r) << r.error();
  if (!r) return {};
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(r->header("content-type").starts_with("text/plain")) << r->header("content-type");
  return parse_metrics(r->body);
}

// One request on a fresh connection; the whole response.
raw_response exchange(unsigned short port, const std::string& bytes) {
  auto r = http_exchange(port, bytes, response_timeout);
  EXPECT_TRUE(r) << r.error();
  return r ? *r : raw_response{};
}

struct usage_seen {
  std::int64_t prompt = -1, completion = -1;
};

// The usage of a non-streaming response or of a stream's usage chunk.
usage_seen usage_of(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::element u;
  usage_seen out;
  if (parser.parse(json)["usage"].get(u) != simdjson::SUCCESS || u.is_null()) return out;
  EXPECT_EQ(u["prompt_tokens"].get(out.prompt), simdjson::SUCCESS) << json;
  EXPECT_EQ(u["completion_tokens"].get(out.completion), simdjson::SUCCESS) << json;
  return out;
}

// An OpenAI error object; returns its code.
std::string error_code_of(const raw_response& r) {
  simdjson::dom::parser parser;
  simdjson::dom::object error;
  EXPECT_EQ(parser.parse(r.body)["error"].get(error), simdjson::SUCCESS) << r.body;
  std::string_view message, type, code;
  EXPECT_EQ(error["message"].get(message), simdjson::SUCCESS) << r.body;
  EXPECT_EQ(error["type"].get(type), simdjson::SUCCESS) << r.body;
  EXPECT_TRUE(error["param"].error() == simdjson::SUCCESS) << "no 'param' in " << r.body;
  if (error["code"].get(code) != simdjson::SUCCESS) return {};
  return std::string(code);
}

std::string text_of(const std::string& json, int choice = 0) {
  simdjson::dom::parser parser;
  simdjson::dom::array choices;
  if (parser.parse(json)["choices"].get(choices) != simdjson::SUCCESS) return "<no choices>";
  std::string_view text;
  if (choices.at(choice)["text"].get(text) != simdjson::SUCCESS) return "<no text>";
  return std::string(text);
}

// /metrics counters move by exactly the requests and tokens sent, stream or not, n = 1 or 2.
TEST(openai_http, metrics_counters_move_by_what_was_sent) {
  OPENAI_REQUIRE_MODEL();
  server_process server;
  ASSERT_TRUE(server.ready()) << server.error();
  const auto before = scrape(server.port());
  ASSERT_TRUE(before.contains(series("pagedserve:prompt_tokens_total"))) << "no prompt_tokens_total series";
  for (const char* gauge : {"pagedserve:num_requests_running", "pagedserve:num_requests_waiting",
                            "pagedserve:kv_cache_usage_perc", "pagedserve:prefix_cache_hits_total",
                            "pagedserve:prefix_cache_queries_total", "pagedserve:num_preemptions_total"})
    EXPECT_TRUE(before.contains(series(gauge))) << gauge;
  EXPECT_TRUE(before.contains(series("pagedserve:time_to_first_token_seconds_bucket", "le=\"+Inf\"")));

  // 1 + 1 + 2 engine requests; ignore_eos makes every completion exactly max_tokens long.
  std::int64_t prompt_tokens = 0, completion_tokens = 0;
  auto plain = exchange(server.port(), http_post_bytes("/v1/completions",
      R"({"prompt":"Once upon a time","max_tokens":7,"temperature":0,"ignore_eos":true})"));
  ASSERT_EQ(plain.status, 200) << plain.body;
  auto u = usage_of(plain.body);
  EXPECT_EQ(u.completion, 7);
  prompt_tokens += u.prompt;
  completion_tokens += u.completion;

  auto streamed = exchange(server.port(), http_post_bytes("/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":5,"temperature":0,)"
      R"("ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}})"));
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  EXPECT_EQ(streamed.header("content-type"), "text/event-stream");
  const auto events = sse_data(streamed.body);
  ASSERT_GE(events.size(), 3u) << streamed.body;
  EXPECT_EQ(events.back(), "[DONE]");
  u = usage_of(events[events.size() - 2]);
  EXPECT_EQ(u.completion, 5) << events[events.size() - 2];
  prompt_tokens += u.prompt;
  completion_tokens += u.completion;

  auto two = exchange(server.port(), http_post_bytes("/v1/completions",
      R"({"prompt":"One day","max_tokens":4,"n":2,"temperature":0.8,"seed":3,"ignore_eos":true})"));
  ASSERT_EQ(two.status, 200) << two.body;
  u = usage_of(two.body);
  EXPECT_EQ(u.completion, 8);
  prompt_tokens += 2 * u.prompt;  // the prompt counts once in usage, but is prefilled for each sample
  completion_tokens += u.completion;

  const auto after = scrape(server.port());
  auto delta = [&](const std::string& key) { return after.at(key) - (before.contains(key) ? before.at(key) : 0.0); };
  EXPECT_EQ(delta(series("pagedserve:prompt_tokens_total")), prompt_tokens);
  EXPECT_EQ(delta(series("pagedserve:generation_tokens_total")), completion_tokens);
  EXPECT_EQ(delta(series("pagedserve:request_success_total", "finished_reason=\"length\"")), 4);
  EXPECT_EQ(delta(series("pagedserve:request_success_total", "finished_reason=\"stop\"")), 0);
  EXPECT_EQ(delta(series("pagedserve:e2e_request_latency_seconds_count")), 4);
  EXPECT_EQ(delta(series("pagedserve:time_to_first_token_seconds_count")), 4);
  EXPECT_EQ(delta(series("pagedserve:request_queue_time_seconds_count")), 4);
  EXPECT_EQ(delta(series("pagedserve:request_generation_tokens_sum")), completion_tokens);
  // One inter-token gap per token after each request's first.
  EXPECT_EQ(delta(series("pagedserve:inter_token_latency_seconds_count")), completion_tokens - 4);
  EXPECT_EQ(after.at(series("pagedserve:num_requests_running")), 0);
  EXPECT_EQ(after.at(series("pagedserve:kv_cache_usage_perc")), 0);
}

// Keep-alive: two generations and a /health written back to back on one connection are answered
// in order, and the connection stays open for a fourth.
TEST(openai_http, pipelined_requests_on_one_connection) {
  OPENAI_REQUIRE_MODEL();
  server_process server;
  ASSERT_TRUE(server.ready()) << server.error();
  const std::string first = R"({"prompt":"Once upon a time","max_tokens":12,"temperature":0})";
  const std::string second = R"({"prompt":"One day, Lily","max_tokens":9,"temperature":0})";
  const std::string expected_first = text_of(exchange(server.port(), http_post_bytes("/v1/completions", first)).body);
  const std::string expected_second = text_of(exchange(server.port(), http_post_bytes("/v1/completions", second)).body);

  http_conn c;
  ASSERT_TRUE(c.connect(server.port()));
  ASSERT_TRUE(c.send(http_post_bytes("/v1/completions", first) + http_post_bytes("/v1/completions", second) +
                     http_get_bytes("/health")));
  auto r1 = c.read_response();
  ASSERT_TRUE(r1) << r1.error();
  auto r2 = c.read_response();
  ASSERT_TRUE(r2) << r2.error();
  auto r3 = c.read_response();
  ASSERT_TRUE(r3) << r3.error();
  EXPECT_EQ(r1->status, 200);
  EXPECT_EQ(text_of(r1->body), expected_first);
  EXPECT_EQ(r2->status, 200);
  EXPECT_EQ(text_of(r2->body), expected_second);
  EXPECT_EQ(r3->status, 200);
  EXPECT_TRUE(parse_health(r3->body)) << r3->body;
  ASSERT_TRUE(c.send(http_get_bytes("/version")));
  auto r4 = c.read_response();
  ASSERT_TRUE(r4) << r4.error();
  EXPECT_EQ(r4->status, 200);
  EXPECT_NE(r4->body.find("\"version\""), std::string::npos) << r4->body;
}

// Bad input gets the OpenAI error shape with its status, and never costs the connection its
// keep-alive (except 413, after which the unread body makes the stream unusable).
TEST(openai_http, error_statuses) {
  OPENAI_REQUIRE_MODEL();
  server_process server({"--max-body-bytes", "4096"});
  ASSERT_TRUE(server.ready()) << server.error();
  http_conn c;
  ASSERT_TRUE(c.connect(server.port()));
  auto ask = [&](const std::string& bytes) {
    EXPECT_TRUE(c.send(bytes));
    auto r = c.read_response();
    EXPECT_TRUE(r) << r.error();
    return r ? *r : raw_response{};
  };
  auto bad_json = ask(http_post_bytes("/v1/completions", R"({"prompt": "x",)"));
  EXPECT_EQ(bad_json.status, 400);
  EXPECT_EQ(error_code_of(bad_json), "invalid_json");
  auto bad_field = ask(http_post_bytes("/v1/chat/completions", R"({"messages":"hi"})"));
  EXPECT_EQ(bad_field.status, 400);
  EXPECT_EQ(error_code_of(bad_field), "invalid_type");
  // Unknown arguments are ignored (as vLLM does) and named in a header.
  auto unknown_arg = ask(http_post_bytes("/v1/completions", R"({"prompt":"x","max_tokens":2,"max_tokenz":3,"cache_prompt":true})"));
  EXPECT_EQ(unknown_arg.status, 200) << unknown_arg.body;
  EXPECT_EQ(unknown_arg.header("x-ignored-fields"), "max_tokenz, cache_prompt");
  auto too_long = ask(http_post_bytes("/v1/completions", R"({"prompt":"x","max_tokens":100000})"));
  EXPECT_EQ(too_long.status, 400);
  EXPECT_EQ(error_code_of(too_long), "invalid_max_tokens");
  auto model = ask(http_post_bytes("/v1/completions", R"({"prompt":"x","model":"gpt-4o"})"));
  EXPECT_EQ(model.status, 404);
  EXPECT_EQ(error_code_of(model), "model_not_found");
  auto route = ask(http_get_bytes("/v1/nothing"));
  EXPECT_EQ(route.status, 404);
  EXPECT_EQ(error_code_of(route), "not_found");
  auto method = ask(http_get_bytes("/v1/completions"));
  EXPECT_EQ(method.status, 405);
  EXPECT_EQ(method.header("allow"), "POST, OPTIONS");
  auto fine = ask(http_post_bytes("/v1/completions", R"({"prompt":"x","max_tokens":2})"));
  EXPECT_EQ(fine.status, 200) << "the connection must still work after errors: " << fine.body;

  auto big = ask(http_post_bytes("/v1/completions", R"({"prompt":")" + std::string(5000, 'a') + R"("})"));
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(error_code_of(big), "body_too_large");
  EXPECT_TRUE(c.closed_by_server(std::chrono::seconds(5)));
  // Chunked bodies have no declared length: the limit applies as they arrive.
  http_conn chunked;
  ASSERT_TRUE(chunked.connect(server.port()));
  const std::string part(3000, 'b');
  char size[16];
  std::snprintf(size, sizeof size, "%zx", part.size());
  ASSERT_TRUE(chunked.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                           std::string(size) + "\r\n" + part + "\r\n" + size + "\r\n" + part + "\r\n0\r\n\r\n"));
  auto r = chunked.read_response();
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->status, 413);
  auto health = get_health(server.port());
  ASSERT_TRUE(health) << health.error();
  EXPECT_EQ(health->status, "ok");
}

// With an API key every /v1/* route and the WebSocket upgrade need it; /health does not. CORS
// preflight answers for the configured origin.
TEST(openai_http, api_key_and_cors) {
  OPENAI_REQUIRE_MODEL();
  server_process server({"--api-key", "sk-test", "--cors-allow-origin", "http://app.example"});
  ASSERT_TRUE(server.ready()) << server.error();
  const std::string body = R"({"prompt":"x","max_tokens":2})";
  auto missing = exchange(server.port(), http_post_bytes("/v1/completions", body));
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(error_code_of(missing), "invalid_api_key");
  auto wrong = exchange(server.port(), http_post_bytes("/v1/completions", body, {"Authorization: Bearer sk-nope"}));
  EXPECT_EQ(wrong.status, 401);
  auto models = exchange(server.port(), http_get_bytes("/v1/models"));
  EXPECT_EQ(models.status, 401);
  auto right = exchange(server.port(), http_post_bytes("/v1/completions", body, {"Authorization: Bearer sk-test"}));
  EXPECT_EQ(right.status, 200) << right.body;
  EXPECT_EQ(exchange(server.port(), http_get_bytes("/health")).status, 200);

  const std::string upgrade = "GET /v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";
  EXPECT_EQ(exchange(server.port(), upgrade + "\r\n").status, 401);
  EXPECT_EQ(exchange(server.port(), upgrade + "Authorization: Bearer sk-test\r\n\r\n").status, 101);

  auto preflight = exchange(server.port(), "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                           "Origin: http://app.example\r\nAccess-Control-Request-Method: POST\r\n"
                                           "Access-Control-Request-Headers: authorization, content-type\r\n\r\n");
  EXPECT_EQ(preflight.status, 204);
  EXPECT_EQ(preflight.header("access-control-allow-origin"), "http://app.example");
  EXPECT_EQ(preflight.header("access-control-allow-headers"), "authorization, content-type");
  auto cors = exchange(server.port(), http_post_bytes("/v1/completions", body,
                                                      {"Authorization: Bearer sk-test", "Origin: http://app.example"}));
  EXPECT_EQ(cors.header("access-control-allow-origin"), "http://app.example");
  auto other = exchange(server.port(), http_get_bytes("/health", {"Origin: http://evil.example"}));
  EXPECT_EQ(other.header("access-control-allow-origin"), "");
}

}  // namespace
}  // namespace pagedserve::e2e
