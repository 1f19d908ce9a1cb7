#pragma once
// Splits a model's output into its reasoning (<think>...</think>, as Qwen3 and DeepSeek-R1 write it)
// and the answer after it, as it streams. Fed any split of the output, it gives the same two texts as
// when fed the whole: text that may be the start of a marker is held back until decided.
//
// qwen3: reasoning only when the output opens with <think> (or the prompt already opened it, as
// templates do that start the assistant's turn with "<think>\n"); otherwise all is content.
// deepseek_r1: the output starts inside the reasoning (a leading <think> is dropped) until </think>.
// Newlines after <think>, whitespace before </think> and newlines after it are dropped; reasoning
// that never closes (max_tokens hit) stays reasoning.
#include <optional>
#include <string>
#include <string_view>

namespace pagedserve {

enum class reasoning_syntax { none, qwen3, deepseek_r1 };

// "none", "qwen3", "deepseek_r1"; nothing for any other name.
std::optional<reasoning_syntax> reasoning_syntax_from(std::string_view name);
// The server's choice: a name above, or "auto": qwen3 when the chat template writes <think>, else none.
reasoning_syntax reasoning_syntax_resolve(std::string_view setting, bool template_writes_think);
// Whether a rendered prompt ends inside an open <think> block (the output then starts in reasoning).
bool prompt_opens_reasoning(std::string_view prompt_tail);

struct reasoning_split {
  std::string reasoning;
  std::string content;
};

class reasoning_parser {
 public:
  reasoning_parser(reasoning_syntax syntax, bool prompt_opened);
  reasoning_split push(std::string_view text);
  reasoning_split finish();

 private:
  enum class state { start, think_start, thinking, answer_start, answering };
  void step(reasoning_split& out);

  state state_;
  bool drop_open_;       // deepseek_r1: a leading <think> is not reasoning
  std::string pending_;  // not yet decided
  std::string held_space_;  // reasoning's trailing whitespace: dropped before </think>
};

}  // namespace pagedserve
