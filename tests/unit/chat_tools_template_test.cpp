// Conversations with tools rendered by real templates: the request's tools, an assistant turn of
// tool_calls (arguments sent as a JSON string, seen by the template as an object, as vLLM passes
// them) and the tool's answer; chat_template_kwargs reaching the template (Qwen3's enable_thinking);
// and the forced-call constraint built from the tools.
#include <gtest/gtest.h>

#include "grammar/output_format_compiler.hpp"
#include <simdjson.h>

#include "chat/chat_template.hpp"
#include "chat/chat_tool_messages.hpp"
#include "chat/tool_call_family.hpp"
#include "chat/tool_call_schema.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

constexpr std::string_view tools_json =
    R"([{"type":"function","function":{"name":"get_weather","description":"Weather of a city",)"
    R"("parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},)"
    R"({"type":"function","function":{"name":"get_time"}}])";
constexpr std::string_view calls_json =
    R"([{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}])";

// The conversation of a tool round trip: the question, the model's call, the tool's answer.
std::expected<std::string, std::string> render(const chat_template& tpl, std::string_view kwargs, bool with_tools = true,
                                               std::optional<std::string> bos = std::nullopt) {
  chat_template_context ctx;
  ctx.bos_token = std::move(bos);
  ctx.messages.push_back(chat_value::object{{"role", "user"}, {"content", "Weather in Paris?"}});
  auto calls = chat_tool_calls_value(calls_json);
  if (!calls) return std::unexpected(calls.error());
  ctx.messages.push_back(chat_value::object{{"role", "assistant"}, {"content", ""}, {"tool_calls", std::move(*calls)}});
  ctx.messages.push_back(chat_value::object{{"role", "tool"}, {"content", "18C, sunny"}, {"tool_call_id", "call_1"}});
  ctx.add_generation_prompt = true;
  auto vars = chat_request_variables(with_tools ? tools_json : "", kwargs, "");
  if (!vars) return std::unexpected(vars.error());
  ctx.variables = std::move(*vars);
  return tpl.render(ctx);
}

struct loaded_template {
  chat_template tpl;
  std::string source;
  std::optional<std::string> bos;
};

std::optional<loaded_template> load(std::string_view name) {
  const auto dir = test::tokenizer_dir(name);
  if (dir.empty()) return std::nullopt;
  auto config = chat_template_load(dir / "tokenizer_config.json");
  if (!config || !config->chat_template) return std::nullopt;
  auto tpl = chat_template::parse(*config->chat_template);
  if (!tpl) return std::nullopt;
  return loaded_template{std::move(*tpl), *config->chat_template, config->bos_token};
}

TEST(chat_tools_template, qwen3_renders_tools_calls_and_tool_answers) {
  auto qwen3 = load("qwen3");
  ASSERT_TRUE(qwen3) << "tests/data/models/tokenizers/qwen3 is in the repository";
  EXPECT_EQ(tool_call_family_detect(qwen3->source), tool_call_family::hermes);
  auto text = render(qwen3->tpl, "");
  ASSERT_TRUE(text) << text.error();
  // The tools as the template's system block lists them (tojson: Python's json.dumps spacing).
  EXPECT_NE(text->find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\""), std::string::npos) << *text;
  // The call, its arguments an object again, and the tool's answer in a user turn.
  EXPECT_NE(text->find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"),
            std::string::npos) << *text;
  EXPECT_NE(text->find("<|im_start|>user\n<tool_response>\n18C, sunny\n</tool_response><|im_end|>"), std::string::npos)
      << *text;
  EXPECT_TRUE(text->ends_with("<|im_start|>assistant\n")) << *text;
  // Without tools (tool_choice none) the system block is gone; the conversation is still rendered.
  auto bare = render(qwen3->tpl, "", false);
  ASSERT_TRUE(bare) << bare.error();
  EXPECT_EQ(bare->find("<tools>"), std::string::npos);
}

TEST(chat_tools_template, qwen3_enable_thinking_through_template_kwargs) {
  auto qwen3 = load("qwen3");
  ASSERT_TRUE(qwen3);
  auto off = render(qwen3->tpl, R"({"enable_thinking": false})");
  auto on = render(qwen3->tpl, R"({"enable_thinking": true})");
  ASSERT_TRUE(off && on);
  EXPECT_TRUE(off->ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n")) << *off;
  EXPECT_TRUE(on->ends_with("<|im_start|>assistant\n")) << *on;
  EXPECT_FALSE(render(qwen3->tpl, "[1]").has_value());  // kwargs must be an object
}

TEST(chat_tools_template, llama3_renders_a_tool_conversation) {
  auto llama3 = load("llama3");
  if (!llama3) GTEST_SKIP() << "the Llama 3 tokenizer is only in ../shared: skipping";
  auto text = render(llama3->tpl, "", true, llama3->bos);
  ASSERT_TRUE(text) << text.error();
  EXPECT_NE(text->find("<|start_header_id|>tool<|end_header_id|>\n\n18C, sunny<|eot_id|>"), std::string::npos) << *text;
}

TEST(tool_call_schema, a_forced_call_of_one_named_tool) {
  auto c = tool_call_constraint_build(tool_call_family::hermes, tools_json, "get_weather");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->prefix, "<tool_call>\n");
  EXPECT_EQ(c->suffix, "\n</tool_call>");
  simdjson::dom::parser parser;
  simdjson::dom::element schema;
  ASSERT_EQ(parser.parse(c->schema).get(schema), simdjson::SUCCESS) << c->schema;
  EXPECT_EQ(std::string_view(schema["properties"]["name"]["const"]), "get_weather");
  EXPECT_EQ(std::string_view(schema["properties"]["arguments"]["required"].at(0)), "city");
  EXPECT_EQ(simdjson::minify(schema["required"]), R"(["name","arguments"])");
}

TEST(tool_call_schema, required_allows_any_tool_in_the_family_shape) {
  auto c = tool_call_constraint_build(tool_call_family::llama3_json, tools_json, std::nullopt);
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->prefix, "");
  simdjson::dom::parser parser;
  simdjson::dom::element schema;
  ASSERT_EQ(parser.parse(c->schema).get(schema), simdjson::SUCCESS) << c->schema;
  simdjson::dom::array options = schema["anyOf"];
  ASSERT_EQ(options.size(), 2u);
  EXPECT_EQ(std::string_view(options.at(1)["properties"]["name"]["const"]), "get_time");
  // A tool without parameters takes an object with any properties; llama3 names them "parameters".
  EXPECT_EQ(simdjson::minify(options.at(1)["properties"]["parameters"]), R"({"type":"object","properties":{}})");
  auto mistral = tool_call_constraint_build(tool_call_family::mistral, tools_json, std::nullopt);
  ASSERT_TRUE(mistral);
  EXPECT_EQ(mistral->prefix + "{...}" + mistral->suffix, "[TOOL_CALLS][{...}]");
}

// What the request actor hands the constrained decoder compiles, for every family and choice.
TEST(tool_call_schema, every_family_s_forced_call_compiles_to_a_grammar) {
  for (const auto family : {tool_call_family::hermes, tool_call_family::llama3_json, tool_call_family::mistral})
    for (const std::optional<std::string_view> name : {std::optional<std::string_view>{}, std::optional<std::string_view>{"get_weather"}}) {
      auto c = tool_call_constraint_build(family, tools_json, name);
      ASSERT_TRUE(c) << c.error();
      const output_format f{output_format::kind::json_schema, c->schema, c->prefix, c->suffix};
      auto g = grammar::compile_output_format_cached(f);
      EXPECT_TRUE(g) << (g ? "" : g.error()) << "\n" << c->schema;
    }
}

TEST(tool_call_schema, refusals) {
  EXPECT_FALSE(tool_call_constraint_build(tool_call_family::none, tools_json, std::nullopt));
  EXPECT_FALSE(tool_call_constraint_build(tool_call_family::hermes, tools_json, "nope"));
  EXPECT_FALSE(tool_call_constraint_build(tool_call_family::hermes, "[]", std::nullopt));
}

}  // namespace
}  // namespace pagedserve
