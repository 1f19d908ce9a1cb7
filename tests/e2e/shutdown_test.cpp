// Graceful shutdown through the real binary: SIGTERM/SIGINT drain the server (no new requests, the
// ones in flight finish or, after the grace period, end with error shutting_down), every request gets
// exactly one final message, and the process exits 0; a second signal exits at once.
#include <gtest/gtest.h>

#include <thread>

#include "e2e/e2e_check.hpp"
#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"
#include "e2e/stream_collector.hpp"

namespace pagedserve::e2e {
namespace {

constexpr auto stream_timeout = std::chrono::seconds(30);
constexpr auto exit_timeout = std::chrono::seconds(20);  // a hang fails the test instead of blocking it

std::string long_generate(const std::string& id) { return generate_frame(id, "Once upon a time", 400, R"(,"ignore_eos":true)"); }

// Every id ended exactly once: a done (finish_reason length) or an error shutting_down. Returns how
// many ended with the error.
int expect_one_final_each(const stream_collector& frames, const std::vector<std::string>& ids) {
  int n_ended = 0;
  for (const auto& id : ids) {
    SCOPED_TRACE("request '" + id + "'");
    const request_log& log = frames[id];
    EXPECT_EQ(log.dones.size() + log.errors.size(), 1u) << "expected exactly one final frame";
    EXPECT_TRUE(log.after_done.empty());
    for (const auto& d : log.dones) EXPECT_EQ(d.finish_reason, "length") << d.raw;
    for (const auto& e : log.errors) EXPECT_EQ(e.code, "shutting_down") << e.raw;
    n_ended += static_cast<int>(log.errors.size());
  }
  return n_ended;
}

// A socket the server closes: the next read ends with an error, not a timeout.
void expect_closed_by_server(ws_client& client) {
  for (;;) {
    auto f = client.read(std::chrono::seconds(10));
    if (f) continue;
    EXPECT_NE(f.error(), "timeout") << "the server did not close the WebSocket";
    return;
  }
}

// One sequence at a time and a 1 s grace: most of 32 long requests are still queued when the grace
// ends, so the drain, the refusal of new work and the forced end are all exercised.
TEST(shutdown, sigterm_drains_refuses_new_work_then_ends_the_rest_and_exits_0) {
  E2E_REQUIRE_MODEL();
  server_process server({"--max-num-seqs", "1", "--shutdown-grace", "1"});
  ASSERT_TRUE(server.ready()) << server.error();
  ws_client client;
  E2E_ASSERT_OK(client.connect(server.port()));
  std::vector<std::string> ids;
  for (int i = 0; i < 32; ++i) {
    ids.push_back("q" + std::to_string(i));
    E2E_ASSERT_OK(client.send_text(long_generate(ids.back())));
  }
  stream_collector frames;
  ASSERT_TRUE(read_until(client, frames, [&] { return frames.n_frames > 0; }, stream_timeout)) << server.log();
  // All 32 in the scheduler before the OpenAI stream arrives, so it queues behind 31 x 400 tokens and
  // cannot finish inside the 1 s grace (the frames are read one by one; under load the stream could
  // otherwise overtake most of them and complete).
  const auto submitted_by = std::chrono::steady_clock::now() + stream_timeout;
  for (;;) {
    auto h = get_health(server.port());
    ASSERT_TRUE(h) << h.error();
    if (h->running + h->waiting >= 32) break;
    ASSERT_LT(std::chrono::steady_clock::now(), submitted_by) << "the 32 requests never all reached the scheduler";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // An OpenAI stream queued behind them, with a /health pipelined behind it on the same connection.
  http_conn http;
  ASSERT_TRUE(http.connect(server.port()));
  ASSERT_TRUE(http.send(http_post_bytes("/v1/completions",
                                        R"({"prompt":"Hello","max_tokens":400,"ignore_eos":true,"stream":true})") +
                        http_get_bytes("/health")));

  server.signal(SIGTERM);
  ASSERT_TRUE(server.wait_for_log("draining", std::chrono::seconds(10))) << server.log();
  E2E_ASSERT_OK(client.send_text(generate_frame("late", "Hello", 5)));
  ASSERT_TRUE(read_until(
      client, frames,
      [&] {
        for (const auto& id : ids)
          if (frames[id].dones.empty() && frames[id].errors.empty()) return false;
        return !frames["late"].errors.empty();
      },
      stream_timeout))
      << server.log();
  EXPECT_TRUE(frames.problems.empty()) << frames.problems.front();
  EXPECT_GT(expect_one_final_each(frames, ids), 0) << "the grace period ended no request";
  ASSERT_EQ(frames["late"].errors.size(), 1u);
  EXPECT_EQ(frames["late"].errors.front().code, "shutting_down");
  EXPECT_TRUE(frames["late"].dones.empty());
  expect_closed_by_server(client);

  // The stream ends with its error event and [DONE] (or a 503 if it never got a token).
  auto sse = http.read_response(stream_timeout);
  ASSERT_TRUE(sse) << sse.error();
  if (sse->status == 200) {
    const auto events = sse_data(sse->body);
    ASSERT_GE(events.size(), 2u) << sse->body;
    EXPECT_EQ(events.back(), "[DONE]");
    EXPECT_NE(events[events.size() - 2].find("shutting_down"), std::string::npos) << sse->body;
  } else {
    EXPECT_EQ(sse->status, 503) << sse->body;
    EXPECT_NE(sse->body.find("shutting_down"), std::string::npos) << sse->body;
  }
  auto health = http.read_response(stream_timeout);
  ASSERT_TRUE(health) << health.error();
  EXPECT_EQ(health->status, 503) << "a draining server must fail /health for load balancers";
  EXPECT_NE(health->body.find(R"("status":"draining")"), std::string::npos) << health->body;
  EXPECT_TRUE(http.closed_by_server(std::chrono::seconds(10)));

  const process_result r = server.wait_exit(exit_timeout);
  EXPECT_FALSE(r.timed_out) << r.err;
  EXPECT_TRUE(r.exited) << "ended by signal " << r.term_signal << "\n" << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// With the default grace, SIGINT lets every stream run to its end before the process exits 0.
TEST(shutdown, sigint_lets_every_stream_finish) {
  E2E_REQUIRE_MODEL();
  server_process server;
  ASSERT_TRUE(server.ready()) << server.error();
  ws_client client;
  E2E_ASSERT_OK(client.connect(server.port()));
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back("s" + std::to_string(i));
    E2E_ASSERT_OK(client.send_text(generate_frame(ids.back(), "Once upon a time", 64, R"(,"ignore_eos":true)")));
  }
  stream_collector frames;
  ASSERT_TRUE(read_until(client, frames, [&] { return frames.n_frames > 0; }, stream_timeout)) << server.log();
  server.signal(SIGINT);
  ASSERT_TRUE(read_until(
      client, frames,
      [&] {
        for (const auto& id : ids)
          if (!frames.done(id)) return false;
        return true;
      },
      stream_timeout))
      << server.log();
  EXPECT_EQ(expect_one_final_each(frames, ids), 0);
  for (const auto& id : ids) EXPECT_EQ(frames[id].dones.front().completion_tokens, 64);
  expect_closed_by_server(client);
  const process_result r = server.wait_exit(exit_timeout);
  EXPECT_FALSE(r.timed_out) << r.err;
  EXPECT_TRUE(r.exited && r.exit_code == 0) << "exit " << r.exit_code << ", signal " << r.term_signal << "\n" << r.err;
}

// A second signal while draining exits at once, whatever is still running.
TEST(shutdown, second_signal_exits_at_once) {
  E2E_REQUIRE_MODEL();
  server_process server({"--max-num-seqs", "1"});
  ASSERT_TRUE(server.ready()) << server.error();
  ws_client client;
  E2E_ASSERT_OK(client.connect(server.port()));
  for (int i = 0; i < 64; ++i) E2E_ASSERT_OK(client.send_text(long_generate("x" + std::to_string(i))));
  E2E_ASSERT_OK(client.read(stream_timeout));
  server.signal(SIGTERM);
  ASSERT_TRUE(server.wait_for_log("draining", std::chrono::seconds(10))) << server.log();
  server.signal(SIGTERM);
  const process_result r = server.wait_exit(exit_timeout);
  EXPECT_FALSE(r.timed_out) << r.err;
  EXPECT_TRUE(r.exited) << "ended by signal " << r.term_signal;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("exiting now"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pagedserve::e2e
