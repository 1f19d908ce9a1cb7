// The weight format option: config model.quantize, `serve/generate --quantize`, and its mapping to
// weight_format; an unknown value is a validation error naming the choices.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "pagedserve/config.hpp"
#include "pagedserve/model.hpp"
#include "src/cli_options.hpp"

namespace pagedserve {
namespace {

std::expected<cli_options, cli_stop> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "pagedserve");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return cli_parse(static_cast<int>(argv.size()), argv.data());
}

TEST(quantize_option, config_file_sets_it_and_validation_names_the_choices) {
  const auto path = std::filesystem::temp_directory_path() / ("pagedserve_q_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << R"({"model":{"quantize":"int8"}})";
  const auto c = config_load(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(c.has_value()) << c.error().front();
  EXPECT_EQ(c->model.quantize, "int8");
  EXPECT_TRUE(config_validate(*c).empty());
  EXPECT_EQ(config{}.model.quantize, "none");
  config bad;
  bad.model.quantize = "q4_0";
  const auto errors = config_validate(bad);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "model.quantize must be none, f32, bf16, int8 or int4 (got 'q4_0')");
}

TEST(quantize_option, serve_and_generate_take_the_flag) {
  const auto serve = parse({"serve", "--quantize", "int8"});
  ASSERT_TRUE(serve.has_value()) << serve.error().text;
  EXPECT_EQ(serve->settings.model.quantize, "int8");
  const auto gen = parse({"generate", "--model", "m.bin", "--prompt", "hi", "--quantize", "bf16"});
  ASSERT_TRUE(gen.has_value()) << gen.error().text;
  EXPECT_EQ(gen->settings.model.quantize, "bf16");
  const auto int4 = parse({"serve", "--quantize", "int4"});
  ASSERT_TRUE(int4.has_value()) << int4.error().text;
  EXPECT_EQ(int4->settings.model.quantize, "int4");
  const auto bad = parse({"serve", "--quantize", "int3"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().text.find("--quantization"), std::string::npos) << bad.error().text;
  EXPECT_NE(bad.error().text.find("not a quantization this engine has"), std::string::npos) << bad.error().text;
}

TEST(quantize_option, names_map_to_weight_formats) {
  EXPECT_EQ(weight_format_parse("none"), weight_format::as_stored);
  EXPECT_EQ(weight_format_parse("f32"), weight_format::f32);
  EXPECT_EQ(weight_format_parse("bf16"), weight_format::bf16);
  EXPECT_EQ(weight_format_parse("int8"), weight_format::int8);
  EXPECT_EQ(weight_format_parse("int4"), weight_format::int4);
  EXPECT_EQ(weight_format_parse("INT8"), std::nullopt);
  EXPECT_EQ(weight_format_parse(""), std::nullopt);
}

}  // namespace
}  // namespace pagedserve
