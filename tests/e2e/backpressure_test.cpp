// Backpressure: a WebSocket client that never reads, beside 16 that do. Its requests end with error
// client_too_slow once its outbound queue passes max_outbound_bytes, the 16 streams complete with
// the CLI's text, server memory stays bounded and the engine ends at rest. Throughput is compared
// by load-tests/stalled_reader.sh, never asserted here.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <memory>

#include "e2e/e2e_check.hpp"
#include "support/server_process.hpp"
#include "e2e/stream_collector.hpp"

namespace pagedserve::e2e {
namespace {

constexpr auto stream_timeout = std::chrono::seconds(60);
// Far below what 64 unbounded queues would take (plus ASan's quarantine in that tree).
constexpr std::int64_t rss_growth_bound = (128ll << 20) + test::sanitizer_rss_allowance_bytes;

std::int64_t rss_bytes(unsigned short port) {
  auto res = http_get(port, "/health");
  if (!res) return -1;
  simdjson::dom::parser parser;
  std::int64_t rss = -1;
  if (parser.parse(res->body)["rss_bytes"].get(rss) != simdjson::SUCCESS) return -1;
  return rss;
}

TEST(backpressure, a_stalled_reader_is_ended_and_the_others_stream_on) {
  E2E_REQUIRE_MODEL();
  const std::string prompt = "One day, Lily";
  const process_result cli = cli_generate(prompt, 100);
  ASSERT_TRUE(cli.exited && cli.exit_code == 0) << cli.err;
  server_process server({"--max-outbound-bytes", "16384"});
  ASSERT_TRUE(server.ready()) << server.error();
  const std::int64_t rss_before = rss_bytes(server.port());
  ASSERT_GT(rss_before, 0);

  // 64 long generations with 20 logprobs a token (~600 B a frame): far more than the kernel buffers
  // between us and the server hold, so the server's queue for this socket fills.
  ws_client stalled;
  stalled.shrink_receive_buffer(4096);
  E2E_ASSERT_OK(stalled.connect(server.port()));
  std::vector<std::string> stalled_ids;
  for (int i = 0; i < 64; ++i) {
    stalled_ids.push_back("slow" + std::to_string(i));
    E2E_ASSERT_OK(stalled.send_text(
        generate_frame(stalled_ids.back(), "Once upon a time", 400, R"(,"ignore_eos":true,"logprobs":20)")));
  }

  std::vector<std::unique_ptr<ws_client>> clients;
  std::vector<stream_collector> frames(16);
  std::vector<ws_stream> streams;
  for (int i = 0; i < 16; ++i) {
    clients.push_back(std::make_unique<ws_client>());
    E2E_ASSERT_OK(clients.back()->connect(server.port()));
    E2E_ASSERT_OK(clients.back()->send_text(generate_frame("n", prompt, 100)));
    streams.push_back({clients.back().get(), &frames[static_cast<std::size_t>(i)]});
  }
  ASSERT_TRUE(read_until(
      streams,
      [&] {
        for (const auto& f : frames)
          if (!f.done("n")) return false;
        return true;
      },
      stream_timeout))
      << server.log();
  for (const auto& f : frames) {
    EXPECT_TRUE(f.problems.empty()) << f.problems.front();
    EXPECT_EQ(f["n"].text, cli.out);
    ASSERT_EQ(f["n"].dones.size(), 1u);
    EXPECT_TRUE(f["n"].errors.empty());
  }

  // The stalled requests end (the engine is at rest) while their client still reads nothing.
  auto idle = wait_for_idle(server.port(), stream_timeout);
  ASSERT_TRUE(idle) << idle.error();
  EXPECT_TRUE(idle->idle()) << "running " << idle->running << ", waiting " << idle->waiting << ", "
                            << idle->kv_blocks_free << "/" << idle->kv_blocks_total << " blocks free";
  const std::int64_t rss_after = rss_bytes(server.port());
  EXPECT_LT(rss_after - rss_before, rss_growth_bound) << "RSS " << rss_before << " -> " << rss_after;

  // Now it reads: each of its requests ended exactly once, and the queue limit ended some.
  stream_collector slow;
  ASSERT_TRUE(read_until(
      stalled, slow,
      [&] {
        for (const auto& id : stalled_ids)
          if (slow[id].dones.empty() && slow[id].errors.empty()) return false;
        return true;
      },
      stream_timeout))
      << server.log();
  int n_too_slow = 0;
  for (const auto& id : stalled_ids) {
    SCOPED_TRACE(id);
    EXPECT_EQ(slow[id].dones.size() + slow[id].errors.size(), 1u);
    for (const auto& e : slow[id].errors) {
      EXPECT_EQ(e.code, "client_too_slow") << e.raw;
      ++n_too_slow;
    }
  }
  EXPECT_GT(n_too_slow, 0) << "the outbound limit never ended a request of the stalled reader";
}

}  // namespace
}  // namespace pagedserve::e2e
