// `pagedserve serve` flags override the config, and a bad value is an error naming the flag.
#include <gtest/gtest.h>

#include "src/cli_options.hpp"

namespace pagedserve {
namespace {

std::expected<cli_options, std::vector<std::string>> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "pagedserve");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return cli_parse(static_cast<int>(argv.size()), argv.data());
}

TEST(cli_options, scheduling_flags_override_the_defaults) {
  auto o = parse({"serve", "--max-decode-slowdown", "1.5", "--prefix-caching", "off", "--max-num-seqs", "8"});
  ASSERT_TRUE(o.has_value()) << o.error().front();
  EXPECT_DOUBLE_EQ(o->settings.engine.max_decode_slowdown, 1.5);
  EXPECT_FALSE(o->settings.engine.prefix_caching);
  EXPECT_EQ(o->settings.engine.max_num_seqs, 8);
  auto on = parse({"serve", "--prefix-caching", "on"});
  ASSERT_TRUE(on.has_value());
  EXPECT_TRUE(on->settings.engine.prefix_caching);
}

TEST(cli_options, the_kv_cache_dtype_is_f32_or_f16) {
  EXPECT_EQ(parse({"serve"})->settings.engine.kv_cache_dtype, "f32");
  auto o = parse({"serve", "--kv-cache-dtype", "f16"});
  ASSERT_TRUE(o.has_value()) << o.error().front();
  EXPECT_EQ(o->settings.engine.kv_cache_dtype, "f16");
  EXPECT_FALSE(parse({"serve", "--kv-cache-dtype", "fp8"}).has_value());
}

TEST(cli_options, a_hub_model_takes_a_revision) {
  auto o = parse({"serve", "--model", "Qwen/Qwen3-0.6B", "--revision", "v1.0"});
  ASSERT_TRUE(o.has_value()) << o.error().front();
  EXPECT_EQ(o->settings.model.model, "Qwen/Qwen3-0.6B");
  EXPECT_EQ(o->settings.model.revision, "v1.0");
  EXPECT_EQ(parse({"generate", "--model", "o/m", "--prompt", "x"})->settings.model.revision, "main");
  EXPECT_FALSE(parse({"serve", "--revision", ""}).has_value());
}

TEST(cli_options, access_and_write_timeout_flags) {
  const auto defaults = parse({"serve"});
  ASSERT_TRUE(defaults.has_value());
  EXPECT_EQ(defaults->settings.server.allowed_hosts, "");
  EXPECT_EQ(defaults->settings.server.allowed_origins, "");
  EXPECT_EQ(defaults->settings.server.write_timeout_seconds, 60);
  auto o = parse({"serve", "--allowed-hosts", "box.lan,*", "--allowed-origins", "http://app.example", "--write-timeout",
                  "5"});
  ASSERT_TRUE(o.has_value()) << o.error().front();
  EXPECT_EQ(o->settings.server.allowed_hosts, "box.lan,*");
  EXPECT_EQ(o->settings.server.allowed_origins, "http://app.example");
  EXPECT_EQ(o->settings.server.write_timeout_seconds, 5);
  EXPECT_FALSE(parse({"serve", "--write-timeout", "0"}).has_value());
  EXPECT_FALSE(parse({"serve", "--write-timeout", "soon"}).has_value());
}

TEST(cli_options, bad_values_are_errors) {
  EXPECT_FALSE(parse({"serve", "--prefix-caching", "maybe"}).has_value());
  EXPECT_FALSE(parse({"serve", "--max-decode-slowdown", "fast"}).has_value());
  EXPECT_FALSE(parse({"serve", "--max-decode-slowdown", "0.5"}).has_value());
  EXPECT_FALSE(parse({"serve", "--no-such-flag", "1"}).has_value());
}

}  // namespace
}  // namespace pagedserve
