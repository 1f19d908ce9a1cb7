// Config files: defaults, overrides, and every problem reported together.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "pagedserve/config.hpp"

namespace pagedserve {
namespace {

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  auto p = std::filesystem::temp_directory_path() / ("pagedserve_cfg_" + std::to_string(::getpid()) + name);
  std::ofstream(p) << text;
  return p;
}

TEST(config, the_shipped_default_loads_and_validates) {
  auto c = config_load(std::filesystem::path(PAGEDSERVE_SOURCE_DIR) / "config" / "default.json");
  ASSERT_TRUE(c.has_value()) << c.error().front();
  EXPECT_TRUE(config_validate(*c).empty());
  EXPECT_EQ(c->engine.block_size, 16);
  EXPECT_EQ(c->engine.kv_blocks, 0) << "the pool sized by kv_cache_memory";
  EXPECT_EQ(c->engine.kv_cache_memory, "auto");
}

TEST(config, values_override_defaults) {
  auto c = config_load(write_temp("a.json", R"({"server":{"port":9000},"engine":{"kv_blocks":7,"kernels":"scalar"}})"));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->server.port, 9000);
  EXPECT_EQ(c->engine.kv_blocks, 7);
  EXPECT_EQ(c->engine.kernels, "scalar");
  EXPECT_EQ(c->engine.max_num_seqs, engine_config{}.max_num_seqs);
}

TEST(config, scheduling_bounds_and_prefix_caching_are_read_and_checked) {
  auto c = config_load(write_temp("d.json", R"({"engine":{"max_decode_slowdown":1.5,"prefix_caching":false}})"));
  ASSERT_TRUE(c.has_value()) << c.error().front();
  EXPECT_DOUBLE_EQ(c->engine.max_decode_slowdown, 1.5);
  EXPECT_FALSE(c->engine.prefix_caching);
  auto wrong = config_load(write_temp("e.json", R"({"engine":{"max_decode_slowdown":"2","prefix_caching":1}})"));
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().size(), 2u);
  config bad;
  bad.engine.max_decode_slowdown = 0.5;  // would leave no room even for the decodes
  EXPECT_EQ(config_validate(bad).size(), 1u);
}

TEST(config, the_kv_cache_dtype_is_read_and_checked) {
  auto c = config_load(write_temp("k.json", R"({"engine":{"kv_cache_dtype":"f16"}})"));
  ASSERT_TRUE(c.has_value()) << c.error().front();
  EXPECT_EQ(c->engine.kv_cache_dtype, "f16");
  EXPECT_TRUE(config_validate(*c).empty());
  auto wrong = config_load(write_temp("l.json", R"({"engine":{"kv_cache_dtype":"bf16"}})"));
  ASSERT_TRUE(wrong.has_value());
  const auto errors = config_validate(*wrong);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors.front().find("kv_cache_dtype must be f32, f16, q8, fp8, fp8_e4m3 or fp8_e5m2"), std::string::npos)
      << errors.front();
  for (const std::string type : {"q8", "fp8", "fp8_e4m3", "fp8_e5m2"}) {
    auto ok = config_load(write_temp("m.json", R"({"engine":{"kv_cache_dtype":")" + type + R"("}})"));
    ASSERT_TRUE(ok.has_value()) << type;
    EXPECT_TRUE(config_validate(*ok).empty()) << type;
  }
  auto e4m3fn = config_load(write_temp("n.json", R"({"engine":{"kv_cache_dtype":"fp8_e4m3fn"}})"));
  ASSERT_TRUE(e4m3fn.has_value());
  EXPECT_EQ(config_validate(*e4m3fn).size(), 1u);
}

TEST(config, special_tokens_in_content_is_read_and_checked) {
  EXPECT_EQ(config{}.engine.special_tokens_in_content, "parse");  // Hugging Face's and vLLM's default
  auto c = config_load(write_temp("s.json", R"({"engine":{"special_tokens_in_content":"text"}})"));
  ASSERT_TRUE(c.has_value()) << c.error().front();
  EXPECT_EQ(c->engine.special_tokens_in_content, "text");
  EXPECT_TRUE(config_validate(*c).empty());
  auto wrong = config_load(write_temp("t.json", R"({"engine":{"special_tokens_in_content":"escape"}})"));
  ASSERT_TRUE(wrong.has_value());
  const auto errors = config_validate(*wrong);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors.front().find("special_tokens_in_content must be parse or text"), std::string::npos) << errors.front();
}

TEST(config, reasoning_parser_is_read_and_checked) {
  EXPECT_EQ(config{}.engine.reasoning_parser, "auto");  // from the chat template, as documented
  auto c = config_load(write_temp("r.json", R"({"engine":{"reasoning_parser":"deepseek_r1"}})"));
  ASSERT_TRUE(c.has_value()) << c.error().front();
  EXPECT_EQ(c->engine.reasoning_parser, "deepseek_r1");
  EXPECT_TRUE(config_validate(*c).empty());
  auto wrong = config_load(write_temp("w.json", R"({"engine":{"reasoning_parser":"o1"}})"));
  ASSERT_TRUE(wrong.has_value());
  const auto errors = config_validate(*wrong);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors.front().find("reasoning_parser must be auto, qwen3, deepseek_r1 or none"), std::string::npos);
}

TEST(config, the_replica_name_is_read_and_checked) {
  auto c = config_load(write_temp("f.json", R"({"server":{"replica_name":"gpu-less-1"}})"));
  ASSERT_TRUE(c.has_value()) << c.error().front();
  EXPECT_EQ(c->server.replica_name, "gpu-less-1");
  EXPECT_TRUE(config_validate(*c).empty());
  EXPECT_TRUE(server_config{}.replica_name.empty()) << "empty: the server names itself <hostname>:<port>";
  config bad;
  bad.server.replica_name = "two\nlines";
  EXPECT_EQ(config_validate(bad).size(), 1u);
  bad.server.replica_name = std::string(129, 'r');
  EXPECT_EQ(config_validate(bad).size(), 1u);
}

TEST(config, unknown_keys_and_wrong_types_are_all_reported) {
  auto c = config_load(write_temp("b.json", R"({"server":{"port":"x","colour":1},"engine":{"kv_blocks":1.5},"extra":{}})"));
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().size(), 4u);
  config bad;
  bad.engine.kv_blocks = -1;
  bad.engine.kernels = "gpu";
  bad.server.port = 70000;
  EXPECT_EQ(config_validate(bad).size(), 3u);
  EXPECT_FALSE(config_load(write_temp("c.json", "{not json")).has_value());
}

TEST(config, the_speculative_config_is_read_and_checked) {
  auto c = config_load(write_temp("s.json", R"({"engine":{"speculative_config":{"method":"ngram",
      "num_speculative_tokens":3,"prompt_lookup_max":5,"prompt_lookup_min":2}}})"));
  ASSERT_TRUE(c.has_value()) << c.error().front();
  EXPECT_EQ(c->engine.speculative.method, "ngram");
  EXPECT_EQ(c->engine.speculative.num_speculative_tokens, 3);
  EXPECT_EQ(c->engine.speculative.prompt_lookup_max, 5);
  EXPECT_EQ(c->engine.speculative.prompt_lookup_min, 2);
  EXPECT_TRUE(config_validate(*c).empty());
  auto wrong = config_load(write_temp("t.json", R"({"engine":{"speculative_config":{"method":4,"extra":1}}})"));
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().size(), 2u);
  std::vector<std::string> errors;
  // vLLM's inference: proposals alone are n-gram lookup, a model a draft model.
  EXPECT_EQ(speculative_config_parse(R"({"num_speculative_tokens":4})", errors).method, "ngram");
  config draft;
  draft.engine.speculative = speculative_config_parse(R"({"model":"d.bin","num_speculative_tokens":4})", errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(draft.engine.speculative.method, "draft_model");
  EXPECT_TRUE(config_validate(draft).empty());
  draft.engine.speculative.model.clear();  // a draft model method without its model
  EXPECT_EQ(config_validate(draft).size(), 1u);
  draft.engine.speculative = speculative_config_parse(R"({"method":"ngram","model":"d.bin","num_speculative_tokens":4})", errors);
  EXPECT_EQ(config_validate(draft).size(), 1u);
  config none;
  none.engine.speculative = speculative_config_parse("{}", errors);
  EXPECT_TRUE(config_validate(none).empty());  // off
}

}  // namespace
}  // namespace pagedserve
