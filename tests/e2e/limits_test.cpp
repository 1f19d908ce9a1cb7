// Limits from config, each hit over real sockets and answered with its clear error: max connections,
// max header size, requests in flight on one WebSocket, and the request timeout.
#include <gtest/gtest.h>

#include "e2e/e2e_check.hpp"
#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"
#include "e2e/stream_collector.hpp"

namespace pagedserve::e2e {
namespace {

constexpr auto timeout = std::chrono::seconds(30);

// Past max_connections a connection gets 503 too_many_connections and is closed; once one closes
// there is room again.
TEST(limits, connections_past_the_limit_get_503) {
  E2E_REQUIRE_MODEL();
  server_process server({"--max-connections", "3"});
  ASSERT_TRUE(server.ready()) << server.error();
  // Three kept-alive connections, each proven counted by an answered request (retried while the
  // start-up probe's connection may still hold a slot).
  std::vector<std::unique_ptr<http_conn>> open;
  for (int attempt = 0; attempt < 200 && open.size() < 3; ++attempt) {
    auto c = std::make_unique<http_conn>();
    ASSERT_TRUE(c->connect(server.port()));
    ASSERT_TRUE(c->send(http_get_bytes("/version")));
    auto r = c->read_response(timeout);
    ASSERT_TRUE(r) << r.error();
    if (r->status == 200) open.push_back(std::move(c));
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(open.size(), 3u);
  http_conn extra;
  ASSERT_TRUE(extra.connect(server.port()));
  auto refused = extra.read_response(timeout);
  ASSERT_TRUE(refused) << refused.error();
  EXPECT_EQ(refused->status, 503);
  EXPECT_NE(refused->body.find("too_many_connections"), std::string::npos) << refused->body;
  EXPECT_EQ(refused->header("retry-after"), "1");
  EXPECT_TRUE(extra.closed_by_server(timeout));

  open.front()->close();
  bool served = false;
  for (int i = 0; i < 200 && !served; ++i) {  // until the server has seen the close
    auto h = http_get(server.port(), "/health");
    served = h && h->status == 200;
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(served);
}

TEST(limits, header_past_max_header_bytes_gets_431) {
  E2E_REQUIRE_MODEL();
  server_process server({"--max-header-bytes", "2048"});
  ASSERT_TRUE(server.ready()) << server.error();
  http_conn c;
  ASSERT_TRUE(c.connect(server.port()));
  ASSERT_TRUE(c.send(http_get_bytes("/health", {"X-Padding: " + std::string(4096, 'a')})));
  auto r = c.read_response(timeout);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->status, 431);
  EXPECT_NE(r->body.find("header_too_large"), std::string::npos) << r->body;
}

// One request past max_requests_per_socket gets too_many_requests; the others run on.
TEST(limits, requests_in_flight_on_one_websocket) {
  E2E_REQUIRE_MODEL();
  server_process server({"--max-requests-per-socket", "2", "--max-num-seqs", "1"});
  ASSERT_TRUE(server.ready()) << server.error();
  ws_client client;
  E2E_ASSERT_OK(client.connect(server.port()));
  for (const char* id : {"a", "b", "c"})
    E2E_ASSERT_OK(client.send_text(generate_frame(id, "Once upon a time", 300, R"(,"ignore_eos":true)")));
  stream_collector frames;
  ASSERT_TRUE(read_until(client, frames, [&] { return frames.done("a") && frames.done("b"); }, timeout));
  ASSERT_EQ(frames["c"].errors.size(), 1u);
  EXPECT_EQ(frames["c"].errors.front().code, "too_many_requests");
}

// With one sequence at a time, requests queued behind long ones outlive a 1 s request timeout and
// end with error request_timeout (504 on the OpenAI API); every request still ends exactly once.
TEST(limits, request_timeout_ends_long_requests) {
  E2E_REQUIRE_MODEL();
  server_process server({"--request-timeout", "1", "--max-num-seqs", "1"});
  ASSERT_TRUE(server.ready()) << server.error();
  ws_client client;
  E2E_ASSERT_OK(client.connect(server.port()));
  std::vector<std::string> ids;
  for (int i = 0; i < 64; ++i) {
    ids.push_back("t" + std::to_string(i));
    E2E_ASSERT_OK(client.send_text(generate_frame(ids.back(), "Once upon a time", 400, R"(,"ignore_eos":true)")));
  }
  stream_collector frames;
  ASSERT_TRUE(read_until(
      client, frames,
      [&] {
        for (const auto& id : ids)
          if (frames[id].dones.empty() && frames[id].errors.empty()) return false;
        return true;
      },
      std::chrono::seconds(60)))
      << server.log();
  int n_timed_out = 0;
  for (const auto& id : ids) {
    SCOPED_TRACE(id);
    EXPECT_EQ(frames[id].dones.size() + frames[id].errors.size(), 1u);
    for (const auto& e : frames[id].errors) {
      EXPECT_EQ(e.code, "request_timeout") << e.raw;
      ++n_timed_out;
    }
  }
  EXPECT_GT(n_timed_out, 0);
  auto idle = wait_for_idle(server.port(), timeout);
  ASSERT_TRUE(idle) << idle.error();
  EXPECT_TRUE(idle->idle());
}

}  // namespace
}  // namespace pagedserve::e2e
