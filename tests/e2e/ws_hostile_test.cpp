// Hostile WebSocket clients (issue 17 item 4) over a real socket: error frames quote at most 64 bytes
// of client text, so a client sending huge bad frames and never reading costs bounded memory; a
// client that never reads is closed once a write has been blocked for write_timeout_seconds, its
// requests ended with client_too_slow. A well-behaved client beside each is served; its latency is
// printed, pass/fail rests on outcomes and generous deadlines.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "e2e/e2e_check.hpp"
#include "e2e/proc_memory.hpp"
#include "support/server_process.hpp"
#include "support/sanitizer_env.hpp"
#include "e2e/well_behaved_client.hpp"

namespace pagedserve::e2e {
namespace {

using namespace std::chrono_literals;

// 2000 frames with a 64 KiB unknown key each (128 MB sent) while never reading: each error frame once
// echoed the key (128 MB queued); now each is a few hundred bytes.
TEST(ws_hostile, huge_bad_frames_get_small_errors_and_bounded_memory) {
  E2E_REQUIRE_MODEL();
  server_process server;
  ASSERT_TRUE(server.ready()) << server.error();
  const double alone = well_behaved_request_ms(server.port());
  const std::uint64_t rss_before = proc_status_bytes(server.pid(), "VmRSS");

  ws_client hostile;
  hostile.shrink_receive_buffer(4096);
  ASSERT_TRUE(hostile.connect(server.port()));
  const std::string key(64 << 10, 'k');
  constexpr int n_frames = 2000;
  for (int i = 0; i < n_frames; ++i)
    // In a message, where unknown keys are still refused (unknown top-level ones are ignored).
    // A generous send deadline: on a loaded machine the server may take seconds to read on.
    ASSERT_TRUE(hostile.send_text(R"({"type":"generate","id":"h)" + std::to_string(i) + R"(","messages":[{")" + key +
                                      R"(":"c"}]})",
                                  30s))
        << "frame " << i;
  const double beside = well_behaved_request_ms(server.port());
  std::this_thread::sleep_for(500ms);
  const std::uint64_t peak = proc_status_bytes(server.pid(), "VmHWM");
  std::cout << n_frames << " frames with a 64 KiB unknown key, never read: server RSS " << mib(rss_before)
            << " MiB before, peak " << mib(peak) << " MiB; well-behaved request " << alone << " ms alone, " << beside
            << " ms beside\n";
  EXPECT_GT(alone, 0);
  EXPECT_GT(beside, 0) << "the well-behaved request failed beside the hostile client";
  // ASan's quarantine keeps the freed frames resident: allowed for as the other RSS bounds do.
  EXPECT_LT(peak, rss_before + (64u << 20) + test::sanitizer_rss_allowance_bytes);

  // Every error arrives, each small, quoting the key's first 64 bytes, and the socket still works.
  stream_collector frames;
  ASSERT_TRUE(read_until(hostile, frames, [&] { return frames.n_errors == n_frames; }, 60s))
      << frames.n_errors << " errors of " << n_frames;
  EXPECT_TRUE(frames.problems.empty()) << frames.problems.front();
  for (int i = 0; i < n_frames; i += 97) {
    const auto& errors = frames["h" + std::to_string(i)].errors;
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors.front().code, "unknown_field");
    EXPECT_LT(errors.front().raw.size(), 256u);
    // 64 bytes quoted: "messages[]." and the key's first 53.
    EXPECT_NE(errors.front().message.find("'messages[]." + std::string(53, 'k') + "...'"), std::string::npos)
        << errors.front().message;
  }
  ASSERT_TRUE(hostile.send_text(generate_frame("after", "Once upon a time", 4)));
  ASSERT_TRUE(read_until(hostile, frames, [&] { return frames.done("after"); }, 20s));
}

// A client that asks for long generations and floods bad frames but never reads: once a write has been
// blocked for 2 s the server ends its requests (client_too_slow) and drops the connection. The frame and
// byte bounds are raised (config file) so that only the deadline can end it.
TEST(ws_hostile, a_client_that_never_reads_is_closed_after_the_write_deadline) {
  E2E_REQUIRE_MODEL();
#if defined(__SANITIZE_ADDRESS__)
  // The test needs the server to write faster than the kernel buffers drain, which an ASan+UBSan server
  // (several times slower) does not always do: seen passing in 20 s and failing after 248 s without a
  // blocked write. The deadline itself is exercised by the Release tree.
  GTEST_SKIP() << "needs a Release server's write rate (the deadline is tested in the Release tree)";
#endif
  const auto config = std::filesystem::temp_directory_path() / ("pagedserve-wsdeadline-" + std::to_string(::getpid()) + ".json");
  std::ofstream(config) << R"({"server":{"write_timeout_seconds":2,"max_outbound_frames":10000000,)"
                           R"("max_outbound_bytes":1073741824}})";
  server_process server({"--config", config.string()});
  ASSERT_TRUE(server.ready()) << server.error();
  const double alone = well_behaved_request_ms(server.port());

  ws_client hostile;
  hostile.shrink_receive_buffer(4096);
  ASSERT_TRUE(hostile.connect(server.port()));
  for (int i = 0; i < 8; ++i)
    ASSERT_TRUE(hostile.send_text(generate_frame("long" + std::to_string(i), "Once upon a time", 400, R"(,"ignore_eos":true)")));
  // ~100 bytes of error per frame: 100k frames are ~10 MB, more than the kernel buffers hold, so a write
  // blocks. Sending stops early if the server has already dropped the connection.
  int n_sent = 0;
  while (n_sent < 100000 && hostile.send_text(R"({"type":"x"})", 5s)) ++n_sent;
  const bool closed_logged = server.wait_for_log("websocket client stopped reading", 60s);
  const double beside = well_behaved_request_ms(server.port());
  std::cout << "never reading, " << n_sent << " bad frames sent: well-behaved request " << alone << " ms alone, "
            << beside << " ms beside\n";
  EXPECT_TRUE(closed_logged) << "no write-deadline close in the log:\n" << server.log().substr(0, 4000);
  EXPECT_NE(server.log().find("client_too_slow"), std::string::npos);
  EXPECT_GT(alone, 0);
  EXPECT_GT(beside, 0) << "the well-behaved request failed beside the hostile client";
  // The connection is gone: reading what the kernel still held ends in an error, not a wait.
  std::string ended;
  for (;;) {
    auto f = hostile.read(10s);
    if (!f) {
      ended = f.error();
      break;
    }
  }
  EXPECT_NE(ended, "timeout") << "the server did not close the connection";
  // Its requests were ended and their KV blocks freed.
  auto idle = wait_for_idle(server.port(), 30s);
  ASSERT_TRUE(idle) << idle.error();
  EXPECT_TRUE(idle->idle());
  std::filesystem::remove(config);
}

}  // namespace
}  // namespace pagedserve::e2e
