// The load-test tools' command lines: make-random-model's two positional forms and decode-limit's
// MODEL parse into the shape they describe, refuse a bad or missing argument naming it, and list
// every argument in --help.
#include <gtest/gtest.h>

#include "support/cli_help_check.hpp"
#include "tools_cli.hpp"

namespace pagedserve::bench {
namespace {

template <class Options, class Define>
std::expected<Options, cli_stop> parse(Define define, const std::string& name, const std::vector<std::string>& args) {
  Options o;
  CLI::App app("", name);
  define(app, o);
  if (auto stop = cli_app_parse(app, args)) return std::unexpected(*stop);
  return o;
}

auto llama2c(const std::vector<std::string>& args) {
  return parse<llama2c_random_options>(llama2c_random_define, "make-random-model", args);
}
auto gguf(const std::vector<std::string>& args) {
  return parse<gguf_random_options>(gguf_random_define, "make-random-model", args);
}

TEST(ToolsCli, MakeRandomModelReadsPerfMdsArguments) {
  auto o = llama2c({"s110m.bin", "768", "2048", "12", "12", "12", "32000", "1024", "0", "1"});
  ASSERT_TRUE(o) << o.error().text;
  EXPECT_EQ(o->out, "s110m.bin");
  EXPECT_EQ(o->config.dim, 768);
  EXPECT_EQ(o->config.hidden_dim, 2048);
  EXPECT_EQ(o->config.n_kv_heads, 12);
  EXPECT_EQ(o->config.vocab_size, 32000);
  EXPECT_EQ(o->config.seq_len, 1024);
  EXPECT_TRUE(o->config.shared_classifier);
  EXPECT_EQ(o->seed, 1u);
  auto untied = llama2c({"m.bin", "64", "128", "2", "4", "2", "512", "256", "1", "9"});
  ASSERT_TRUE(untied) << untied.error().text;
  EXPECT_FALSE(untied->config.shared_classifier);
}

TEST(ToolsCli, MakeRandomModelReadsTheGgufForm) {
  auto o = gguf({"--gguf", "q30b.gguf", "qwen3moe", "Q4_K_M", "2048", "6144", "48", "32", "4", "128", "151936", "40960",
                 "128", "8", "768", "1", "1"});
  ASSERT_TRUE(o) << o.error().text;
  EXPECT_EQ(o->out, "q30b.gguf");
  EXPECT_EQ(o->config.architecture, "qwen3moe");
  EXPECT_EQ(o->recipe.rules, gguf_recipe::mix::q4_k_m);
  EXPECT_EQ(o->config.head_dim, 128);
  EXPECT_EQ(o->config.n_experts, 128);
  EXPECT_EQ(o->config.n_experts_used, 8);
  EXPECT_EQ(o->config.expert_hidden_dim, 768);
  EXPECT_FALSE(o->config.shared_classifier);
  EXPECT_TRUE(o->tokenizer.empty());
  auto with_vocab = gguf({"--gguf", "m.gguf", "llama", "pure:Q4_K", "256", "512", "2", "4", "4", "0", "512", "256", "0",
                          "0", "0", "0", "3", "tok.bin"});
  ASSERT_TRUE(with_vocab) << with_vocab.error().text;
  EXPECT_EQ(with_vocab->tokenizer, "tok.bin");
  EXPECT_EQ(with_vocab->splits, 1);
  auto split = gguf({"--gguf", "big-Q4_K_M-00001-of-00004.gguf", "qwen2", "Q4_K_M", "256", "512", "2", "4", "4", "0",
                     "512", "256", "0", "0", "0", "0", "3", "--splits", "4"});
  ASSERT_TRUE(split) << split.error().text;
  EXPECT_EQ(split->splits, 4);
  EXPECT_EQ(split->config.architecture, "qwen2");
  auto misnamed = gguf({"--gguf", "big.gguf", "llama", "Q4_K_M", "256", "512", "2", "4", "4", "0", "512", "256", "0",
                        "0", "0", "0", "3", "--splits", "4"});
  ASSERT_FALSE(misnamed);
  EXPECT_NE(misnamed.error().text.find("OUT must name the first split, NAME-00001-of-00004.gguf"), std::string::npos)
      << misnamed.error().text;
}

TEST(ToolsCli, BadOrMissingArgumentsAreNamed) {
  const std::vector<std::string> good = {"m.bin", "64", "128", "2", "4", "2", "512", "256", "0", "1"};
  for (const auto& [index, value, name] : std::vector<std::tuple<int, std::string, std::string>>{
           {1, "0", "dim"}, {2, "wide", "hidden_dim"}, {8, "2", "untied"}, {9, "-1", "-1"}}) {
    auto args = good;
    args[index] = value;
    auto o = llama2c(args);
    ASSERT_FALSE(o) << name;
    EXPECT_EQ(o.error().status, 2);
    EXPECT_NE(o.error().text.find(name), std::string::npos) << o.error().text;
  }
  auto missing = llama2c({"m.bin", "64", "128"});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().text.find("n_layers is required"), std::string::npos) << missing.error().text;
  auto odd_head = llama2c({"m.bin", "66", "128", "2", "6", "2", "512", "256", "0", "1"});
  ASSERT_FALSE(odd_head);
  EXPECT_NE(odd_head.error().text.find("even head size"), std::string::npos) << odd_head.error().text;
  auto recipe = gguf({"--gguf", "m.gguf", "llama", "Q9_K", "256", "512", "2", "4", "4", "0", "512", "256", "0", "0", "0",
                      "0", "3"});
  ASSERT_FALSE(recipe);
  EXPECT_NE(recipe.error().text.find("unknown recipe 'Q9_K'"), std::string::npos) << recipe.error().text;
  auto experts = gguf({"--gguf", "m.gguf", "qwen3", "Q8_0", "256", "512", "2", "4", "4", "0", "512", "256", "4", "2",
                       "64", "0", "3"});
  ASSERT_FALSE(experts);
  EXPECT_NE(experts.error().text.find("none for qwen2 / qwen3"), std::string::npos) << experts.error().text;
  auto no_experts = gguf({"--gguf", "m.gguf", "qwen3moe", "Q8_0", "256", "512", "2", "4", "4", "0", "512", "256", "0",
                          "0", "0", "0", "3"});
  ASSERT_FALSE(no_experts);
  EXPECT_NE(no_experts.error().text.find("need experts for qwen3moe"), std::string::npos) << no_experts.error().text;
  auto no_shared = gguf({"--gguf", "m.gguf", "qwen2moe", "Q8_0", "256", "512", "2", "4", "4", "0", "512", "256", "4",
                         "2", "64", "0", "3"});
  ASSERT_FALSE(no_shared);
  EXPECT_NE(no_shared.error().text.find("--shared-expert-hidden-dim for qwen2moe"), std::string::npos) << no_shared.error().text;
  auto qwen2moe = gguf({"--gguf", "m.gguf", "qwen2moe", "Q8_0", "256", "512", "2", "4", "4", "0", "512", "256", "4",
                        "2", "64", "0", "3", "--shared-expert-hidden-dim", "512"});
  ASSERT_TRUE(qwen2moe) << qwen2moe.error().text;
  EXPECT_EQ(qwen2moe->config.shared_expert_hidden_dim, 512);
  EXPECT_FALSE(qwen2moe->config.norm_topk_prob);
  auto mixtral = gguf({"--gguf", "m.gguf", "llama", "Q8_0", "256", "512", "2", "4", "4", "0", "512", "256", "4", "2",
                       "64", "0", "3"});
  ASSERT_TRUE(mixtral) << mixtral.error().text;  // llama with experts: Mixtral
  EXPECT_EQ(mixtral->config.n_experts, 4);
}

TEST(ToolsCli, DecodeLimitTakesOneModel) {
  auto o = parse<decode_limit_options>(decode_limit_define, "decode-limit", {"model.gguf"});
  ASSERT_TRUE(o) << o.error().text;
  EXPECT_EQ(o->model, "model.gguf");
  EXPECT_EQ(o->quantization, "none");
  EXPECT_EQ(o->kv_cache_dtype, "f32");
  auto served = parse<decode_limit_options>(decode_limit_define, "decode-limit",
                                            {"m.bin", "--quantization", "int8", "--kv-cache-dtype", "q8"});
  ASSERT_TRUE(served) << served.error().text;
  EXPECT_EQ(served->quantization, "int8");
  EXPECT_EQ(served->kv_cache_dtype, "q8");
  EXPECT_FALSE(parse<decode_limit_options>(decode_limit_define, "decode-limit", {}));
  EXPECT_FALSE(parse<decode_limit_options>(decode_limit_define, "decode-limit", {"a", "b"}));
  EXPECT_FALSE(parse<decode_limit_options>(decode_limit_define, "decode-limit", {"m.bin", "--quantization", "fp8"}));
  EXPECT_FALSE(parse<decode_limit_options>(decode_limit_define, "decode-limit", {"m.bin", "--kv-cache-dtype", "bf16"}));
}

TEST(ToolsCli, HelpListsEveryArgument) {
  llama2c_random_options l;
  CLI::App llama2c_app("", "make-random-model");
  llama2c_random_define(llama2c_app, l);
  test::expect_help_lists_every_option(llama2c_app);
  gguf_random_options g;
  CLI::App gguf_app("", "make-random-model");
  gguf_random_define(gguf_app, g);
  test::expect_help_lists_every_option(gguf_app);
  decode_limit_options d;
  CLI::App decode_limit_app("", "decode-limit");
  decode_limit_define(decode_limit_app, d);
  test::expect_help_lists_every_option(decode_limit_app);
}

}  // namespace
}  // namespace pagedserve::bench
