// The server started as a vLLM user and as a llama-server user would start it, over a real socket on
// 127.0.0.1: `serve MODEL` with vLLM's flag names, and `serve -m MODEL` with llama-server's short forms,
// an API key file and -ngl (accepted, ignored with a warning); then what those flags set is observable
// (the served name, the key, the context, the KV pool, the chat template). Also the default: no model at
// all serves the shipped English model, not the random demo.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"

namespace pagedserve::e2e {
namespace {

raw_response post(unsigned short port, const std::string& path, const std::string& body,
                  const std::vector<std::string>& headers = {}) {
  auto r = http_exchange(port, http_post_bytes(path, body, headers, false));
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error());
  return r ? *r : raw_response{};
}

const std::string story_prompt = R"({"prompt":"Once upon a time","max_tokens":24,"temperature":0)";

TEST(familiar_flags, vllm_style_command_line) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  server_process server(server_process::exact_args{{
      "serve", model_path().string(), "--tokenizer", tokenizer_path().string(), "--host", "127.0.0.1", "--port", "0",
      "--served-model-name", "tiny-stories", "--max-model-len", "128", "--kv-cache-dtype", "fp16", "--dtype", "auto",
      "--no-enable-prefix-caching", "--max-num-seqs", "4", "--max-num-batched-tokens", "64", "--seed", "7",
      "--api-key", "sk-vllm", "--gpu-memory-utilization", "0.9", "--kv-cache-memory", "1MiB",
      "--chat-template", "{% for m in messages %}{{ m['content'] }}{% endfor %}"}});
  ASSERT_TRUE(server.ready()) << server.error();
  EXPECT_NE(server.log().find("--gpu-memory-utilization ignored"), std::string::npos) << server.log();
  EXPECT_NE(server.log().find("--kv-cache-memory 1MiB"), std::string::npos) << server.log();
  const std::vector<std::string> auth = {"Authorization: Bearer sk-vllm"};
  EXPECT_EQ(post(server.port(), "/v1/completions", story_prompt + "}").status, 401);
  const raw_response r = post(server.port(), "/v1/completions", story_prompt + R"(,"model":"tiny-stories"})", auth);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"("model":"tiny-stories")"), std::string::npos) << r.body;
  // --max-model-len 128: a longer request is refused for its length, as vLLM does.
  const raw_response too_long = post(server.port(), "/v1/completions",
                                     R"({"prompt":"Once upon a time","max_tokens":200})", auth);
  EXPECT_EQ(too_long.status, 400) << too_long.body;
  // --chat-template: stories260K has none, the one given renders the messages.
  const raw_response chat = post(server.port(), "/v1/chat/completions",
                                 R"({"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":8})", auth);
  EXPECT_EQ(chat.status, 200) << chat.body;
  // 1 MiB of f16 KV, 5 layers x (K+V) x 32 KV dims x 2 B a token: 1 MiB / (640 B * 16 tokens) = 102 blocks.
  const auto health = get_health(server.port());
  ASSERT_TRUE(health.has_value()) << health.error();
  EXPECT_EQ(health->kv_blocks_total, 102);
}

TEST(familiar_flags, llama_server_style_command_line) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  const auto key_file = std::filesystem::temp_directory_path() / ("pagedserve_key_" + std::to_string(::getpid()));
  std::ofstream(key_file) << "sk-llama\n";
  server_process server(server_process::exact_args{{
      "serve", "-m", model_path().string(), "--tokenizer", tokenizer_path().string(), "--host", "127.0.0.1", "--port",
      "0", "-c", "2048", "-np", "4", "-t", "1", "-ngl", "99", "--alias", "llama-stories", "--api-key-file",
      key_file.string(), "--cache-type-k", "f16"}});
  std::filesystem::remove(key_file);
  ASSERT_TRUE(server.ready()) << server.error();
  EXPECT_NE(server.log().find("-ngl/--n-gpu-layers ignored"), std::string::npos) << server.log();
  const raw_response r =
      post(server.port(), "/v1/completions", story_prompt + "}", {"Authorization: Bearer sk-llama"});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"("model":"llama-stories")"), std::string::npos) << r.body;
  const auto health = get_health(server.port());
  ASSERT_TRUE(health.has_value()) << health.error();
  EXPECT_EQ(health->kv_blocks_total, 2048 / 16) << "-c is the KV pool in tokens, as llama-server's";
}

TEST(familiar_flags, no_model_serves_the_shipped_english_model) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  server_process server(server_process::exact_args{{"serve", "--host", "127.0.0.1", "--port", "0"}});
  ASSERT_TRUE(server.ready()) << server.error();
  EXPECT_NE(server.log().find("serving the default model stories260K"), std::string::npos) << server.log();
  const raw_response r = post(server.port(), "/v1/completions", story_prompt + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body.find("demo"), std::string::npos) << r.body;
  // The greedy story of the shipped model, as the CLI writes it from the same files.
  const process_result cli = cli_generate("Once upon a time", 24);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  std::string escaped;
  for (char ch : cli.out) escaped += ch == '"' ? std::string("\\\"") : ch == '\n' ? std::string("\\n") : std::string(1, ch);
  EXPECT_NE(r.body.find(R"("text":")" + escaped), std::string::npos) << r.body << "\nCLI: " << cli.out;
}

TEST(familiar_flags, every_flag_has_an_environment_variable) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  ::setenv("PAGEDSERVE_SERVED_MODEL_NAME", "from-env", 1);
  ::setenv("PAGEDSERVE_API_KEY", "sk-env", 1);
  server_process server(server_process::exact_args{{"serve", "--host", "127.0.0.1", "--port", "0"}});
  ::unsetenv("PAGEDSERVE_SERVED_MODEL_NAME");
  ::unsetenv("PAGEDSERVE_API_KEY");
  ASSERT_TRUE(server.ready()) << server.error();
  EXPECT_EQ(post(server.port(), "/v1/completions", story_prompt + "}").status, 401);
  const raw_response r = post(server.port(), "/v1/completions", story_prompt + "}", {"Authorization: Bearer sk-env"});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"("model":"from-env")"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace pagedserve::e2e
