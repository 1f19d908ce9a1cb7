// `pagedserve`'s command line: flags override the config, --flag=VALUE equals --flag VALUE, a bad
// value or an unknown flag is an error naming the flag, and --help lists every flag defined.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "src/cli_options.hpp"
#include "unit/cli_parse_args.hpp"
#include "support/cli_help_check.hpp"

namespace pagedserve {
namespace {

using test::cli_parse_args;

TEST(cli_options, scheduling_flags_override_the_defaults) {
  auto o = cli_parse_args({"serve", "--max-decode-slowdown", "1.5", "--prefix-caching", "off", "--max-num-seqs", "8"});
  ASSERT_TRUE(o.has_value()) << o.error().text;
  EXPECT_EQ(o->command, "serve");
  EXPECT_DOUBLE_EQ(o->settings.engine.max_decode_slowdown, 1.5);
  EXPECT_FALSE(o->settings.engine.prefix_caching);
  EXPECT_EQ(o->settings.engine.max_num_seqs, 8);
  auto on = cli_parse_args({"serve", "--prefix-caching", "on"});
  ASSERT_TRUE(on.has_value());
  EXPECT_TRUE(on->settings.engine.prefix_caching);
}

TEST(cli_options, a_value_may_follow_an_equals_sign) {
  auto o = cli_parse_args({"serve", "--port=8081", "--host=::1", "--prefix-caching=off", "--max-body-bytes=4096"});
  ASSERT_TRUE(o.has_value()) << o.error().text;
  EXPECT_EQ(o->settings.server.port, 8081);
  EXPECT_EQ(o->settings.server.host, "::1");
  EXPECT_FALSE(o->settings.engine.prefix_caching);
  EXPECT_EQ(o->settings.server.max_body_bytes, 4096u);
  auto g = cli_parse_args({"generate", "--model=m.bin", "--prompt=a=b", "--max-tokens=3", "--seed=7"});
  ASSERT_TRUE(g.has_value()) << g.error().text;
  EXPECT_EQ(g->settings.model.model, "m.bin");
  EXPECT_EQ(g->prompt, "a=b");
  EXPECT_EQ(g->sampling.max_tokens, 3);
  EXPECT_EQ(g->sampling.seed, 7u);
  EXPECT_EQ(g->sampling.temperature, 0.0f) << "the CLI defaults to greedy";
}

TEST(cli_options, the_last_of_a_repeated_flag_wins) {
  auto o = cli_parse_args({"serve", "--port", "1", "--port=2"});
  ASSERT_TRUE(o.has_value()) << o.error().text;
  EXPECT_EQ(o->settings.server.port, 2);
}

TEST(cli_options, flags_override_the_config_file_wherever_it_stands) {
  const auto path = std::filesystem::temp_directory_path() / ("pagedserve_cli_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << R"({"server":{"port":7001,"host":"::1"},"engine":{"kv_blocks":99}})";
  for (const auto& args : {std::vector<std::string>{"serve", "--port", "9", "--config", path.string()},
                           std::vector<std::string>{"serve", "--config", path.string(), "--port", "9"}}) {
    auto o = cli_parse_args(args);
    ASSERT_TRUE(o.has_value()) << o.error().text;
    EXPECT_EQ(o->settings.server.port, 9);
    EXPECT_EQ(o->settings.server.host, "::1");
    EXPECT_EQ(o->settings.engine.kv_blocks, 99);
  }
  std::ofstream(path) << R"({"server":{"no_such_key":1}})";
  auto bad = cli_parse_args({"serve", "--config", path.string()});
  std::filesystem::remove(path);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().status, 2);
  EXPECT_NE(bad.error().text.find("no_such_key"), std::string::npos) << bad.error().text;
}

TEST(cli_options, the_kv_cache_dtype_is_f32_f16_q8_or_fp8) {
  EXPECT_EQ(cli_parse_args({"serve"})->settings.engine.kv_cache_dtype, "f32");
  auto o = cli_parse_args({"serve", "--kv-cache-dtype", "f16"});
  ASSERT_TRUE(o.has_value()) << o.error().text;
  EXPECT_EQ(o->settings.engine.kv_cache_dtype, "f16");
  auto fp8 = cli_parse_args({"serve", "--kv-cache-dtype", "fp8"});
  ASSERT_TRUE(fp8.has_value()) << fp8.error().text;
  EXPECT_EQ(fp8->settings.engine.kv_cache_dtype, "fp8_e4m3");  // vLLM's meaning of fp8
  EXPECT_FALSE(cli_parse_args({"serve", "--kv-cache-dtype", "fp4"}).has_value());
}

TEST(cli_options, a_hub_model_takes_a_revision) {
  auto o = cli_parse_args({"serve", "--model", "Qwen/Qwen3-0.6B", "--revision", "v1.0"});
  ASSERT_TRUE(o.has_value()) << o.error().text;
  EXPECT_EQ(o->settings.model.model, "Qwen/Qwen3-0.6B");
  EXPECT_EQ(o->settings.model.revision, "v1.0");
  EXPECT_EQ(cli_parse_args({"generate", "--model", "o/m", "--prompt", "x"})->settings.model.revision, "main");
  EXPECT_FALSE(cli_parse_args({"serve", "--revision", ""}).has_value());
}

TEST(cli_options, access_and_write_timeout_flags) {
  const auto defaults = cli_parse_args({"serve"});
  ASSERT_TRUE(defaults.has_value());
  EXPECT_EQ(defaults->settings.server.allowed_hosts, "");
  EXPECT_EQ(defaults->settings.server.allowed_origins, "");
  EXPECT_EQ(defaults->settings.server.write_timeout_seconds, 60);
  auto o = cli_parse_args({"serve", "--allowed-hosts", "box.lan,*", "--allowed-origins", "http://app.example", "--write-timeout",
                  "5"});
  ASSERT_TRUE(o.has_value()) << o.error().text;
  EXPECT_EQ(o->settings.server.allowed_hosts, "box.lan,*");
  EXPECT_EQ(o->settings.server.allowed_origins, "http://app.example");
  EXPECT_EQ(o->settings.server.write_timeout_seconds, 5);
  EXPECT_FALSE(cli_parse_args({"serve", "--write-timeout", "0"}).has_value());
  EXPECT_FALSE(cli_parse_args({"serve", "--write-timeout", "soon"}).has_value());
}

TEST(cli_options, bad_values_are_errors_naming_the_flag) {
  for (const auto& [args, flag] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"serve", "--prefix-caching", "maybe"}, "--prefix-caching"},
           {{"serve", "--max-decode-slowdown", "fast"}, "--max-decode-slowdown"},
           {{"serve", "--port=http"}, "--port"},
           {{"serve", "--max-body-bytes", "-1"}, "--max-body-bytes"},
           {{"serve", "--no-such-flag", "1"}, "--no-such-flag"},
           {{"serve", "--port"}, "--port"},
           {{"generate", "--model", "m", "--max-tokens", "0"}, "--max-tokens"},
           {{"generate", "--model", "m", "--temperature", "-1"}, "--temperature"},
           {{"generate", "--model", "m", "--port", "1"}, "--port"},  // a server flag means nothing here
           {{"tokenize", "--text", "x"}, "--tokenizer"},
           {{"convert", "--model", "m.bin", "--out", "d", "--dtype", "f16"}, "--dtype"}}) {
    auto o = cli_parse_args(args);
    ASSERT_FALSE(o.has_value()) << flag;
    EXPECT_EQ(o.error().status, 2) << flag;
    EXPECT_NE(o.error().text.find(flag), std::string::npos) << o.error().text;
  }
  // Checked once the config is whole: the message names the config key, as for a config file.
  auto slow = cli_parse_args({"serve", "--max-decode-slowdown", "0.5"});
  ASSERT_FALSE(slow.has_value());
  EXPECT_NE(slow.error().text.find("engine.max_decode_slowdown"), std::string::npos) << slow.error().text;
  auto nothing = cli_parse_args({});
  ASSERT_FALSE(nothing.has_value());
  EXPECT_EQ(nothing.error().status, 2);
  EXPECT_FALSE(cli_parse_args({"train"}).has_value());
}

TEST(cli_options, the_tools_take_their_flags_and_switches) {
  auto t = cli_parse_args({"tokenize", "--tokenizer", "tok", "--text=--not-a-flag", "--with-special"});
  ASSERT_TRUE(t.has_value()) << t.error().text;
  EXPECT_EQ(t->command, "tokenize");
  EXPECT_EQ(t->tool.tokenize.tokenizer, "tok");
  EXPECT_EQ(t->tool.tokenize.text, "--not-a-flag");
  EXPECT_TRUE(t->tool.tokenize.with_special);
  auto c = cli_parse_args({"chat-template", "--model", "dir", "--messages", "m.json", "--no-generation-prompt"});
  ASSERT_TRUE(c.has_value()) << c.error().text;
  EXPECT_EQ(c->tool.chat_template.messages, "m.json");
  EXPECT_TRUE(c->tool.chat_template.no_generation_prompt);
  auto v = cli_parse_args({"convert", "--model", "m.bin", "--out", "dir"});
  ASSERT_TRUE(v.has_value()) << v.error().text;
  EXPECT_EQ(v->tool.convert.dtype, "f32");
}

TEST(cli_options, help_lists_every_flag_of_every_subcommand) {
  cli_options o;
  CLI::App app("", "pagedserve");
  cli_define(app, o);
  test::expect_help_lists_every_option(app);
  auto help = cli_parse_args({"serve", "--help"});
  ASSERT_FALSE(help.has_value());
  EXPECT_EQ(help.error().status, 0);
  EXPECT_NE(help.error().text.find("--max-num-batched-tokens"), std::string::npos) << help.error().text;
  auto version = cli_parse_args({"--version"});
  ASSERT_FALSE(version.has_value());
  EXPECT_EQ(version.error().status, 0);
  EXPECT_EQ(version.error().text, std::string("pagedserve ") + PAGEDSERVE_VERSION + "\n");
}

}  // namespace
}  // namespace pagedserve
