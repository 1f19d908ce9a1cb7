// --quantize end to end: `generate` and `serve` load stories260K as int8 (and bf16), the server
// streams exactly what the CLI prints for the same weights, and an unknown format is refused at
// start-up with one clear error.
#include <gtest/gtest.h>

#include "support/server_process.hpp"
#include "e2e/stream_collector.hpp"

namespace pagedserve::e2e {
namespace {

process_result generate_with(const std::string& quantize, const std::string& prompt, int max_tokens) {
  return run_process({test::server_binary().string(), "generate", "--model", model_path().string(), "--tokenizer",
                      tokenizer_path().string(), "--prompt", prompt, "--max-tokens", std::to_string(max_tokens),
                      "--temperature", "0", "--quantize", quantize},
                     std::chrono::seconds(30));
}

// int4 on stories260K (rows of 64 and 172 weights, not whole q4_K blocks) takes int8's path for every
// matrix, saying so in the log; tests/model/int4_quantize_test.cpp checks q4_K's numerics.
TEST(quantize, generate_prints_text_for_int8_int4_and_bf16) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  for (const char* q : {"int8", "int4", "bf16"}) {
    const process_result r = generate_with(q, "Once upon a time", 40);
    ASSERT_TRUE(r.exited && r.exit_code == 0) << q << ": " << r.err;
    EXPECT_GT(r.out.size(), 40u) << q << ": " << r.out;
  }
}

TEST(quantize, server_with_int8_streams_what_generate_prints) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  const process_result cli = generate_with("int8", "One day, Lily", 40);
  ASSERT_TRUE(cli.exited && cli.exit_code == 0) << cli.err;
  server_process server({"--quantize", "int8"});
  ASSERT_TRUE(server.ready()) << server.error();
  EXPECT_NE(server.log().find("weights i8"), std::string::npos) << server.log();
  ws_client client;
  const auto connected = client.connect(server.port());
  ASSERT_TRUE(connected) << connected.error();
  const auto sent = client.send_text(generate_frame("q", "One day, Lily", 40));
  ASSERT_TRUE(sent) << sent.error();
  stream_collector frames;
  ASSERT_TRUE(read_until(client, frames, [&] { return frames.done("q"); }, std::chrono::seconds(30)));
  EXPECT_EQ(frames["q"].text, cli.out);
  ASSERT_EQ(frames["q"].dones.size(), 1u);
  EXPECT_EQ(frames["q"].dones.front().completion_tokens, 40);
  client.close();
}

TEST(quantize, unknown_format_is_refused_at_startup) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  const process_result r = run_process({test::server_binary().string(), "serve", "--model", model_path().string(),
                                        "--tokenizer", tokenizer_path().string(), "--port", "0", "--quantize", "int3"},
                                       std::chrono::seconds(5));
  EXPECT_TRUE(r.exited && r.exit_code != 0) << r.err;
  EXPECT_NE(r.err.find("'int3' is not a quantization this engine has"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pagedserve::e2e
