// Faults over real sockets: clients killed mid-stream in bulk, half-open connections, garbage bytes,
// bad WebSocket upgrades and pipelined requests cut off. After each, /health shows the engine at rest
// (every KV block free) and a normal request still completes.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "e2e/e2e_check.hpp"
#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"
#include "e2e/stream_collector.hpp"

namespace pagedserve::e2e {
namespace {

constexpr auto stream_timeout = std::chrono::seconds(30);
constexpr auto close_timeout = std::chrono::seconds(15);  // generous beside the 1 s idle timeout

// The engine is at rest and still serves: all blocks free, then one short generation runs to its end.
void expect_serving(const server_process& server) {
  auto idle = wait_for_idle(server.port(), std::chrono::seconds(20));
  ASSERT_TRUE(idle) << idle.error();
  EXPECT_TRUE(idle->idle()) << "running " << idle->running << ", waiting " << idle->waiting << ", "
                            << idle->kv_blocks_free << "/" << idle->kv_blocks_total << " blocks free";
  ws_client client;
  E2E_ASSERT_OK(client.connect(server.port()));
  E2E_ASSERT_OK(client.send_text(generate_frame("ok", "Once upon a time", 16, R"(,"ignore_eos":true)")));
  stream_collector frames;
  ASSERT_TRUE(read_until(client, frames, [&] { return frames.done("ok"); }, stream_timeout)) << server.log();
  EXPECT_EQ(frames["ok"].dones.front().completion_tokens, 16);
}

class fault : public ::testing::Test {
 protected:
  void SetUp() override {
    E2E_REQUIRE_MODEL();
    server_ = std::make_unique<server_process>(std::vector<std::string>{"--idle-timeout", "1"});
    ASSERT_TRUE(server_->ready()) << server_->error();
  }
  unsigned short port() const { return server_->port(); }
  std::unique_ptr<server_process> server_;
};

// 200 WebSocket clients start a generation each and vanish with a reset once it streams.
TEST_F(fault, two_hundred_clients_reset_mid_stream) {
  constexpr int n_clients = 200;
  std::vector<std::unique_ptr<ws_client>> clients;
  for (int i = 0; i < n_clients; ++i) {
    clients.push_back(std::make_unique<ws_client>());
    E2E_ASSERT_OK(clients.back()->connect(port()));
    E2E_ASSERT_OK(clients.back()->send_text(generate_frame("k", "Once upon a time", 200, R"(,"ignore_eos":true)")));
  }
  for (auto& c : clients) {
    E2E_ASSERT_OK(c->read(stream_timeout));  // it streams: the request is in the engine
    c->abort();
  }
  expect_serving(*server_);
}

// Connections that send nothing, or half a request line, are closed by the idle timeout.
TEST_F(fault, half_open_connections_are_closed_by_the_idle_timeout) {
  http_conn silent, half_line, half_headers;
  ASSERT_TRUE(silent.connect(port()));
  ASSERT_TRUE(half_line.connect(port()));
  ASSERT_TRUE(half_headers.connect(port()));
  ASSERT_TRUE(half_line.send("GET /hea"));
  ASSERT_TRUE(half_headers.send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le"));
  EXPECT_TRUE(silent.closed_by_server(close_timeout));
  EXPECT_TRUE(half_line.closed_by_server(close_timeout));
  EXPECT_TRUE(half_headers.closed_by_server(close_timeout));
  // A WebSocket that never sends a frame and has nothing in flight goes the same way.
  ws_client quiet;
  E2E_ASSERT_OK(quiet.connect(port()));
  auto f = quiet.read(close_timeout);
  ASSERT_FALSE(f);
  EXPECT_NE(f.error(), "timeout");
  expect_serving(*server_);
}

// Random bytes get a 400 or a close, never a crash or a hang.
TEST_F(fault, garbage_bytes_on_the_port) {
  std::mt19937 rng(8);
  for (int round = 0; round < 8; ++round) {
    std::string junk(4096, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    http_conn c;
    ASSERT_TRUE(c.connect(port()));
    c.send(junk);  // the server may close before it has read it all
    auto r = c.read_response(close_timeout);
    if (r) EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_TRUE(c.closed_by_server(close_timeout));
  }
  expect_serving(*server_);
}

// An upgrade without Sec-WebSocket-Key is refused with 400, one with the wrong version with 426
// (RFC 6455 4.4: it names the version we speak); the server carries on.
TEST_F(fault, websocket_upgrade_with_bad_headers) {
  const std::string base = "GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n";
  struct bad_upgrade {
    std::string what, headers;
    int status;
  };
  const std::vector<bad_upgrade> cases = {
      {"no key", "Sec-WebSocket-Version: 13\r\n", 400},
      {"bad version", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 12\r\n", 426},
      {"no version", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", 400},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    http_conn conn;
    ASSERT_TRUE(conn.connect(port()));
    ASSERT_TRUE(conn.send(base + c.headers + "\r\n"));
    auto r = conn.read_head(close_timeout);
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->status, c.status);
  }
  expect_serving(*server_);
}

// Pipelined requests cut mid-body: dropped with a reset, and left hanging (the complete ones are
// answered, then the idle timeout closes the connection).
TEST_F(fault, pipelined_requests_cut_in_the_middle) {
  const std::string stream = http_post_bytes("/v1/completions", R"({"prompt":"Hi","max_tokens":32,"stream":true})");
  const std::string cut = http_post_bytes("/v1/completions", R"({"prompt":"Once upon a time","max_tokens":8})");
  const std::string pipeline = stream + http_get_bytes("/health") + cut.substr(0, cut.size() - 10);
  {
    http_conn reset;
    ASSERT_TRUE(reset.connect(port()));
    ASSERT_TRUE(reset.send(pipeline));
    reset.reset();
  }
  http_conn hanging;
  ASSERT_TRUE(hanging.connect(port()));
  ASSERT_TRUE(hanging.send(pipeline));
  auto first = hanging.read_response(stream_timeout);
  ASSERT_TRUE(first) << first.error();
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(sse_data(first->body).back(), "[DONE]");
  auto second = hanging.read_response(stream_timeout);
  ASSERT_TRUE(second) << second.error();
  EXPECT_EQ(second->status, 200);
  EXPECT_TRUE(hanging.closed_by_server(close_timeout));
  expect_serving(*server_);
}

}  // namespace
}  // namespace pagedserve::e2e
