// --kv-cache-dtype f16 and fp8 end to end: the server keeps keys and values as fp16 (fp8 e4m3), streams
// over a real WebSocket, gives each of two concurrent requests the same text it gives that request alone
// (f16: and the text `generate` prints with the same flag), and refuses an unknown element type at start-up.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "support/server_process.hpp"
#include "e2e/stream_collector.hpp"

namespace pagedserve::e2e {
namespace {

// Sends each (id, prompt) on one connection at once, greedy; returns the collected streams.
stream_collector run_requests(int port, const std::vector<std::pair<std::string, std::string>>& requests, int max_tokens) {
  ws_client client;
  const auto connected = client.connect(port);
  EXPECT_TRUE(connected) << connected.error();
  for (const auto& [id, prompt] : requests) {
    const auto sent = client.send_text(generate_frame(id, prompt, max_tokens));
    EXPECT_TRUE(sent) << sent.error();
  }
  stream_collector frames;
  EXPECT_TRUE(read_until(
      client, frames,
      [&] { return std::all_of(requests.begin(), requests.end(), [&](const auto& r) { return frames.done(r.first); }); },
      std::chrono::seconds(30)));
  client.close();
  return frames;
}

TEST(kv_cache_dtype, f16_and_fp8_servers_stream_the_same_text_batched_as_alone) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  // flag, its name in the start-up log, the cache's element type there
  for (auto [flag, name, elements] : {std::tuple{"f16", "f16", "f16"}, std::tuple{"fp8", "fp8_e4m3", "f8_e4m3"}}) {
    SCOPED_TRACE(flag);
    server_process server({"--kv-cache-dtype", flag, "--max-num-batched-tokens", "9"});
    ASSERT_TRUE(server.ready()) << server.error();
    EXPECT_NE(server.log().find("(" + std::string(name) + " cache)"), std::string::npos) << server.log();
    EXPECT_NE(server.log().find(std::string(elements) + " elements"), std::string::npos) << server.log();
    const std::vector<std::pair<std::string, std::string>> both = {{"a", "Once upon a time"},
                                                                   {"b", "One day, Lily went to"}};
    stream_collector batched = run_requests(server.port(), both, 48);
    for (const auto& [id, prompt] : both) {
      SCOPED_TRACE(id);
      stream_collector alone = run_requests(server.port(), {{id, prompt}}, 48);
      ASSERT_EQ(batched[id].dones.size(), 1u);
      ASSERT_EQ(alone[id].dones.size(), 1u);
      EXPECT_EQ(batched[id].dones.front().completion_tokens, 48);
      EXPECT_FALSE(alone[id].text.empty());
      EXPECT_EQ(batched[id].text, alone[id].text);
    }
  }
}

// `generate --kv-cache-dtype f16` runs the same numerics as the f16 server: the same greedy text, which
// for this prompt differs from the f32 cache's after a hundred-odd tokens (so the flag is not ignored).
TEST(kv_cache_dtype, generate_with_f16_prints_what_the_f16_server_streams) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  const std::string prompt = "One day, Lily went to";
  auto generate = [&](const char* kv_type) {
    return run_process({test::server_binary().string(), "generate", "--model", model_path().string(), "--tokenizer",
                        tokenizer_path().string(), "--prompt", prompt, "--max-tokens", "200", "--temperature", "0",
                        "--kv-cache-dtype", kv_type},
                       std::chrono::seconds(30));
  };
  const process_result f16 = generate("f16"), f32 = generate("f32");
  ASSERT_TRUE(f16.exited && f16.exit_code == 0) << f16.err;
  ASSERT_TRUE(f32.exited && f32.exit_code == 0) << f32.err;
  EXPECT_NE(f16.out, f32.out) << "fp16 rounding of K/V changes this greedy text somewhere in 200 tokens";
  server_process server({"--kv-cache-dtype", "f16"});
  ASSERT_TRUE(server.ready()) << server.error();
  stream_collector frames = run_requests(server.port(), {{"a", prompt}}, 200);
  ASSERT_EQ(frames["a"].dones.size(), 1u);
  EXPECT_EQ(frames["a"].text, f16.out);
}

TEST(kv_cache_dtype, unknown_type_is_refused_at_startup) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  const process_result r = run_process({test::server_binary().string(), "serve", "--model", model_path().string(),
                                        "--tokenizer", tokenizer_path().string(), "--port", "0", "--kv-cache-dtype",
                                        "fp4"},
                                       std::chrono::seconds(5));
  EXPECT_TRUE(r.exited && r.exit_code != 0) << r.err;
  EXPECT_NE(r.err.find("'fp4': the KV cache holds f32 (auto), f16 (fp16), q8 (q8_0), fp8 (fp8_e4m3) or fp8_e5m2 here"),
            std::string::npos) << r.err;
}

}  // namespace
}  // namespace pagedserve::e2e
