// The flag names users bring from vLLM and llama-server parse to the same settings as ours; what the
// engine lacks is refused saying so; GPU-only flags are accepted with a note; every long flag has its
// PAGEDSERVE_<FLAG> environment variable, below the command line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "src/cli_options.hpp"
#include "unit/cli_parse_args.hpp"

namespace pagedserve {
namespace {

using test::cli_parse_args;

TEST(cli_flag_spellings, vllm_names) {
  auto o = cli_parse_args({"serve", "Qwen/Qwen3-0.6B", "--max-model-len", "4096", "--dtype", "bfloat16", "--kv-cache-dtype",
                  "fp16", "--no-enable-prefix-caching", "--chat-template", "t.jinja", "--served-model-name", "qwen",
                  "--allowed-origins", "http://app", "--seed", "42", "--max-num-seqs", "8", "--max-num-batched-tokens",
                  "256", "--api-key", "k", "--host", "0.0.0.0", "--port", "9000", "--kv-cache-memory", "2GiB",
                  "--max-logprobs", "5"});
  ASSERT_TRUE(o.has_value()) << o.error().text;
  const config& c = o->settings;
  EXPECT_EQ(c.model.model, "Qwen/Qwen3-0.6B");
  EXPECT_EQ(c.engine.max_model_len, 4096);
  EXPECT_EQ(c.model.quantize, "bf16");
  EXPECT_EQ(c.engine.kv_cache_dtype, "f16");
  EXPECT_FALSE(c.engine.prefix_caching);
  EXPECT_EQ(c.model.chat_template, "t.jinja");
  EXPECT_EQ(c.server.served_model_name, "qwen");
  EXPECT_EQ(c.server.allowed_origins, "http://app");
  EXPECT_EQ(c.engine.seed, 42);
  EXPECT_EQ(c.server.max_logprobs, 5);
  EXPECT_EQ(c.engine.max_num_seqs, 8);
  EXPECT_EQ(c.engine.max_num_batched_tokens, 256);
  EXPECT_EQ(c.server.api_key, "k");
  EXPECT_EQ(c.server.host, "0.0.0.0");
  EXPECT_EQ(c.server.port, 9000);
  EXPECT_EQ(c.engine.kv_cache_memory, "2GiB");
  EXPECT_TRUE(cli_parse_args({"serve", "--enable-prefix-caching"})->settings.engine.prefix_caching);
  EXPECT_EQ(cli_parse_args({"serve", "--kv-cache-dtype", "auto"})->settings.engine.kv_cache_dtype, "f32");
  EXPECT_EQ(cli_parse_args({"serve", "--dtype", "auto"})->settings.model.quantize, "none");
  EXPECT_EQ(cli_parse_args({"serve", "--quantization", "w8a8"})->settings.model.quantize, "int8");
}

TEST(cli_flag_spellings, llama_server_short_forms) {
  const auto key_file = std::filesystem::temp_directory_path() / ("pagedserve_key_" + std::to_string(::getpid()));
  std::ofstream(key_file) << "  sk-file \n";
  auto o = cli_parse_args({"serve", "-m", "m.gguf", "-c", "8192", "-t", "4", "-np", "16", "--alias", "mine", "--api-key-file",
                  key_file.string(), "-ngl", "99", "-b", "1024", "--cache-type-k", "f16"});
  std::filesystem::remove(key_file);
  ASSERT_TRUE(o.has_value()) << o.error().text;
  const config& c = o->settings;
  EXPECT_EQ(c.model.model, "m.gguf");
  EXPECT_EQ(c.engine.kv_blocks, 8192 / 16) << "-c is the KV pool in tokens";
  EXPECT_EQ(c.engine.threads, 4);
  EXPECT_EQ(c.engine.max_num_seqs, 16);
  EXPECT_EQ(c.engine.max_num_batched_tokens, 1024);
  EXPECT_EQ(c.server.served_model_name, "mine");
  EXPECT_EQ(c.server.api_key, "sk-file");
  EXPECT_EQ(c.engine.kv_cache_dtype, "f16");
  ASSERT_EQ(o->notes.size(), 1u);
  EXPECT_NE(o->notes[0].find("ignored"), std::string::npos);
  // Ours stay as they were, as aliases of the same settings.
  auto ours = cli_parse_args({"serve", "--model", "m.gguf", "--threads", "4", "--quantize", "int4", "--prefix-caching", "off"});
  ASSERT_TRUE(ours.has_value()) << ours.error().text;
  EXPECT_EQ(ours->settings.model.quantize, "int4");
}

TEST(cli_flag_spellings, kv_cache_types_of_vllm_and_llama_cpp) {
  for (const auto& [spelling, type] : std::vector<std::pair<std::string, std::string>>{
           {"auto", "f32"}, {"fp16", "f16"}, {"half", "f16"}, {"q8_0", "q8"}, {"q8", "q8"}, {"fp8", "fp8_e4m3"},
           {"fp8_e4m3", "fp8_e4m3"}, {"fp8_e5m2", "fp8_e5m2"}}) {
    auto o = cli_parse_args({"serve", "--cache-type-k", spelling});
    ASSERT_TRUE(o.has_value()) << o.error().text;
    EXPECT_EQ(o->settings.engine.kv_cache_dtype, type) << spelling;
  }
}

TEST(cli_flag_spellings, what_the_engine_lacks_is_refused_by_name) {
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"serve", "--kv-cache-dtype", "fp8_e3m4"}, "f32 (auto), f16 (fp16), q8 (q8_0), fp8 (fp8_e4m3) or fp8_e5m2"},
           {{"serve", "--kv-cache-dtype", "q4_0"}, "no other quantized KV cache is implemented"},
           {{"serve", "--dtype", "float16"}, "use bfloat16"},
           {{"serve", "--quantization", "awq"}, "not a quantization this engine has"},
           {{"serve", "--kv-cache-memory", "lots"}, "not a size"},
           {{"serve", "--api-key-file", "/nonexistent/key"}, "cannot read"},
           {{"serve", "-c", "1024", "--kv-blocks", "8"}, "give one"},
           {{"serve", "--demo-model", "--model"}, "--model"}}) {
    auto o = cli_parse_args(args);
    ASSERT_FALSE(o.has_value()) << says;
    EXPECT_EQ(o.error().status, 2);
    EXPECT_NE(o.error().text.find(says), std::string::npos) << o.error().text;
  }
}

TEST(cli_flag_spellings, environment_variables_below_the_command_line) {
  ::setenv("PAGEDSERVE_PORT", "7123", 1);
  ::setenv("PAGEDSERVE_API_KEY", "sk-env", 1);
  ::setenv("PAGEDSERVE_MAX_MODEL_LEN", "256", 1);
  auto env_only = cli_parse_args({"serve"});
  auto flag_wins = cli_parse_args({"serve", "--port", "7000"});
  ::unsetenv("PAGEDSERVE_PORT");
  ::unsetenv("PAGEDSERVE_API_KEY");
  ::unsetenv("PAGEDSERVE_MAX_MODEL_LEN");
  ASSERT_TRUE(env_only.has_value()) << env_only.error().text;
  EXPECT_EQ(env_only->settings.server.port, 7123);
  EXPECT_EQ(env_only->settings.server.api_key, "sk-env");
  EXPECT_EQ(env_only->settings.engine.max_model_len, 256);
  ASSERT_TRUE(flag_wins.has_value());
  EXPECT_EQ(flag_wins->settings.server.port, 7000);
  CLI::App app("", "pagedserve");
  cli_options o;
  cli_define(app, o);
  const std::string help = app.get_subcommand("serve")->help();
  EXPECT_NE(help.find("PAGEDSERVE_KV_CACHE_MEMORY"), std::string::npos) << help;
}

}  // namespace
}  // namespace pagedserve
