// The reasoning splitter: <think>...</think> apart from the answer for Qwen3 and DeepSeek-R1 output,
// whether the output or the prompt opened the block, and the same result at every split.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat/reasoning_parser.hpp"

namespace pagedserve {
namespace {

reasoning_split run(reasoning_syntax s, bool opened, const std::vector<std::string>& pieces) {
  reasoning_parser p(s, opened);
  reasoning_split all;
  auto take = [&](reasoning_split r) {
    all.reasoning += r.reasoning;
    all.content += r.content;
  };
  for (const auto& piece : pieces) take(p.push(piece));
  take(p.finish());
  return all;
}

void expect(reasoning_syntax s, bool opened, const std::string& text, const std::string& reasoning,
            const std::string& content) {
  const reasoning_split whole = run(s, opened, {text});
  EXPECT_EQ(whole.reasoning, reasoning) << text;
  EXPECT_EQ(whole.content, content) << text;
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    const reasoning_split split = run(s, opened, {text.substr(0, cut), text.substr(cut)});
    EXPECT_EQ(split.reasoning, reasoning) << "cut " << cut << ": " << text;
    EXPECT_EQ(split.content, content) << "cut " << cut << ": " << text;
  }
  std::vector<std::string> bytes;
  for (const char c : text) bytes.emplace_back(1, c);
  const reasoning_split one_by_one = run(s, opened, bytes);
  EXPECT_EQ(one_by_one.reasoning, reasoning) << text;
  EXPECT_EQ(one_by_one.content, content) << text;
}

TEST(reasoning_parser, qwen3_output_that_opens_think) {
  const auto q = reasoning_syntax::qwen3;
  expect(q, false, "<think>\nThe user greets me.\n</think>\n\nHello!", "The user greets me.", "Hello!");
  expect(q, false, "<think>\n\n</think>\n\nHi", "", "Hi");  // thinking off: the empty block
  expect(q, false, "No reasoning here, a < b.", "", "No reasoning here, a < b.");
  expect(q, false, "<think>\ncut off by max_tokens", "cut off by max_tokens", "");
  expect(q, false, "<thin", "", "<thin");
  expect(q, false, "Answer with </think> in it", "", "Answer with </think> in it");
}

TEST(reasoning_parser, the_prompt_opened_think) {
  expect(reasoning_syntax::qwen3, true, "Step 1, step 2.\n</think>\n\n42", "Step 1, step 2.", "42");
  expect(reasoning_syntax::qwen3, true, "<think>\nagain\n</think>\n42", "again", "42");
  EXPECT_TRUE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n"));
}

TEST(reasoning_parser, deepseek_r1_starts_in_reasoning) {
  const auto d = reasoning_syntax::deepseek_r1;
  expect(d, false, "Let me think.</think>The answer.", "Let me think.", "The answer.");
  expect(d, false, "<think>\nLet me think.\n</think>\n\nThe answer.", "Let me think.", "The answer.");
  expect(d, false, "never closed", "never closed", "");
}

TEST(reasoning_parser, none_keeps_everything_as_content) {
  expect(reasoning_syntax::none, false, "<think>x</think>y", "", "<think>x</think>y");
}

TEST(reasoning_parser, syntax_names_and_auto) {
  EXPECT_EQ(reasoning_syntax_from("deepseek_r1"), reasoning_syntax::deepseek_r1);
  EXPECT_FALSE(reasoning_syntax_from("auto").has_value());
  EXPECT_EQ(reasoning_syntax_resolve("auto", true), reasoning_syntax::qwen3);
  EXPECT_EQ(reasoning_syntax_resolve("auto", false), reasoning_syntax::none);
  EXPECT_EQ(reasoning_syntax_resolve("none", true), reasoning_syntax::none);
}

}  // namespace
}  // namespace pagedserve
