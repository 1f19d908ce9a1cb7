// End-to-end tests of admission control and client disconnects on the OpenAI HTTP API:
// a burst against a full waiting queue gets documented 429s while every accepted request
// completes, and a client that drops its SSE stream has its request cancelled and its KV freed.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <memory>

#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"

namespace pagedserve::e2e {
namespace {

constexpr auto response_timeout = std::chrono::seconds(60);

#define OPENAI_REQUIRE_MODEL()                   \
  do {                                           \
    PAGEDSERVE_REQUIRE_DATA(model_path());     \
    PAGEDSERVE_REQUIRE_DATA(tokenizer_path()); \
  } while (0)

struct completion_seen {
  std::string finish_reason;
  std::int64_t completion_tokens = -1;
};

completion_seen completion_of(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  completion_seen out;
  if (parser.parse(json).get(root) != simdjson::SUCCESS) return out;
  std::string_view reason;
  if (root["choices"].at(0)["finish_reason"].get(reason) == simdjson::SUCCESS) out.finish_reason = reason;
  if (root["usage"]["completion_tokens"].get(out.completion_tokens) != simdjson::SUCCESS) out.completion_tokens = -1;
  return out;
}

std::map<std::string, double> scrape(unsigned short port) {
  http_conn c;
  EXPECT_TRUE(c.connect(port));
  EXPECT_TRUE(c.send(http_get_bytes("/metrics")));
  auto r = c.read_response(response_timeout);
  EXPECT_TRUE(r) << r.error();
  return r ? parse_metrics(r->body) : std::map<std::string, double>{};
}

// Reads a whole SSE response (head already read) and returns the data payloads.
std::vector<std::string> read_stream_rest(http_conn& c, std::string first_chunk) {
  std::string body = std::move(first_chunk);
  for (;;) {
    auto chunk = c.read_chunk(response_timeout);
    if (!chunk) {
      ADD_FAILURE() << chunk.error();
      break;
    }
    if (chunk->empty()) break;
    body += *chunk;
  }
  return sse_data(body);
}

// max_num_seqs 1 and max_waiting 2: with one long request running, a burst of 20 fills the two
// waiting places and the rest get 429 rate_limit_error / queue_full with Retry-After. Every
// accepted request runs to its full length, and nothing is left in the engine.
TEST(openai_admission, burst_against_a_full_queue_gets_429s) {
  OPENAI_REQUIRE_MODEL();
  server_process server({"--max-num-seqs", "1", "--max-waiting", "2"});
  ASSERT_TRUE(server.ready()) << server.error();
  const auto before = scrape(server.port());

  http_conn slow;
  ASSERT_TRUE(slow.connect(server.port()));
  ASSERT_TRUE(slow.send(http_post_bytes("/v1/completions",
      R"({"prompt":"Once upon a time","max_tokens":500,"temperature":0,"ignore_eos":true,"stream":true})")));
  auto slow_head = slow.read_head(response_timeout);
  ASSERT_TRUE(slow_head) << slow_head.error();
  ASSERT_EQ(slow_head->status, 200);
  auto slow_first = slow.read_chunk(response_timeout);  // its first token: it is running
  ASSERT_TRUE(slow_first) << slow_first.error();

  // Connect all first, then send all: the burst lands within a few milliseconds. Each accepted
  // request takes 200 engine steps, so the queue stays full for the burst however fast this machine is.
  constexpr int n_burst = 20, burst_tokens = 200;
  std::vector<std::unique_ptr<http_conn>> burst;
  for (int i = 0; i < n_burst; ++i) {
    burst.push_back(std::make_unique<http_conn>());
    ASSERT_TRUE(burst.back()->connect(server.port()));
  }
  const std::string request = http_post_bytes("/v1/completions",
      R"({"prompt":"One day","max_tokens":)" + std::to_string(burst_tokens) + R"(,"temperature":0,"ignore_eos":true})");
  for (auto& c : burst) ASSERT_TRUE(c->send(request));

  int n_ok = 0, n_429 = 0;
  for (int i = 0; i < n_burst; ++i) {
    SCOPED_TRACE("burst request " + std::to_string(i));
    auto r = burst[i]->read_response(response_timeout);
    ASSERT_TRUE(r) << r.error();
    if (r->status == 200) {
      ++n_ok;
      const auto seen = completion_of(r->body);
      EXPECT_EQ(seen.finish_reason, "length") << r->body;
      EXPECT_EQ(seen.completion_tokens, burst_tokens) << r->body;
    } else {
      ASSERT_EQ(r->status, 429) << r->body;
      ++n_429;
      EXPECT_EQ(r->header("retry-after"), "1");
      simdjson::dom::parser parser;
      std::string_view type, code;
      ASSERT_EQ(parser.parse(r->body)["error"]["type"].get(type), simdjson::SUCCESS) << r->body;
      EXPECT_EQ(type, "rate_limit_error");
      ASSERT_EQ(parser.parse(r->body)["error"]["code"].get(code), simdjson::SUCCESS) << r->body;
      EXPECT_EQ(code, "queue_full");
    }
  }
  EXPECT_GE(n_ok, 2) << "the two waiting places were free when the burst came";
  EXPECT_GE(n_429, 1) << "a burst of 20 against 1 running + 2 waiting must be refused in part";
  EXPECT_EQ(n_ok + n_429, n_burst);

  const auto events = read_stream_rest(slow, *slow_first);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(completion_of(events[events.size() - 2]).finish_reason, "length") << events[events.size() - 2];

  auto idle = wait_for_idle(server.port(), std::chrono::seconds(10));
  ASSERT_TRUE(idle) << idle.error();
  EXPECT_TRUE(idle->idle());
  const auto after = scrape(server.port());
  const std::string refused = R"(pagedserve:request_failure_total{model_name="stories260K",replica="e2e",code="queue_full"})";
  EXPECT_EQ(after.at(refused) - before.at(refused), n_429);
  const std::string finished = R"(pagedserve:request_success_total{model_name="stories260K",replica="e2e",finished_reason="length"})";
  EXPECT_EQ(after.at(finished) - before.at(finished), n_ok + 1);
}

// A client that drops its stream mid-way: the request is cancelled (finished_reason abort),
// other requests finish untouched, and every KV block comes back.
TEST(openai_admission, disconnect_mid_stream_frees_the_kv_cache) {
  OPENAI_REQUIRE_MODEL();
  server_process server({"--kv-blocks", "256"});
  ASSERT_TRUE(server.ready()) << server.error();
  const auto before = scrape(server.port());

  // Ballast shares every engine step, so the dropped stream runs for a while rather than ~30 ms.
  constexpr int n_ballast = 8;
  std::vector<std::unique_ptr<http_conn>> ballast;
  for (int i = 0; i < n_ballast; ++i) {
    ballast.push_back(std::make_unique<http_conn>());
    ASSERT_TRUE(ballast.back()->connect(server.port()));
    ASSERT_TRUE(ballast.back()->send(http_post_bytes("/v1/completions",
        R"({"prompt":"One day, Lily","max_tokens":400,"temperature":0,"ignore_eos":true})")));
  }
  http_conn dropped;
  ASSERT_TRUE(dropped.connect(server.port()));
  ASSERT_TRUE(dropped.send(http_post_bytes("/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":480,"temperature":0,)"
      R"("ignore_eos":true,"stream":true,"n":2})")));
  auto head = dropped.read_head(response_timeout);
  ASSERT_TRUE(head) << head.error();
  ASSERT_EQ(head->status, 200);
  auto first = dropped.read_chunk(response_timeout);
  ASSERT_TRUE(first) << first.error();
  dropped.close();

  for (int i = 0; i < n_ballast; ++i) {
    auto r = ballast[i]->read_response(response_timeout);
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(completion_of(r->body).completion_tokens, 400) << r->body;
  }
  auto idle = wait_for_idle(server.port(), std::chrono::seconds(10));
  ASSERT_TRUE(idle) << idle.error();
  EXPECT_TRUE(idle->idle()) << "running " << idle->running << ", waiting " << idle->waiting << ", free "
                            << idle->kv_blocks_free << " of " << idle->kv_blocks_total;
  const auto after = scrape(server.port());
  const std::string aborted = R"(pagedserve:request_success_total{model_name="stories260K",replica="e2e",finished_reason="abort"})";
  EXPECT_EQ(after.at(aborted) - before.at(aborted), 2) << "both samples of the dropped stream are cancelled";
  const std::string generated = R"(pagedserve:generation_tokens_total{model_name="stories260K",replica="e2e"})";
  EXPECT_LT(after.at(generated) - before.at(generated), n_ballast * 400 + 2 * 480);
}

}  // namespace
}  // namespace pagedserve::e2e
