#include "chat/reasoning_parser.hpp"

#include <algorithm>

namespace pagedserve {
namespace {

constexpr std::string_view think_open = "<think>", think_close = "</think>";

std::size_t partial_marker_tail(std::string_view text, std::string_view marker) {
  for (std::size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

}  // namespace

std::optional<reasoning_syntax> reasoning_syntax_from(std::string_view name) {
  if (name == "none") return reasoning_syntax::none;
  if (name == "qwen3") return reasoning_syntax::qwen3;
  if (name == "deepseek_r1") return reasoning_syntax::deepseek_r1;
  return std::nullopt;
}

reasoning_syntax reasoning_syntax_resolve(std::string_view setting, bool template_writes_think) {
  if (auto named = reasoning_syntax_from(setting)) return *named;
  return template_writes_think ? reasoning_syntax::qwen3 : reasoning_syntax::none;
}

bool prompt_opens_reasoning(std::string_view prompt_tail) {
  const std::size_t open = prompt_tail.rfind(think_open);
  if (open == std::string_view::npos) return false;
  const std::size_t close = prompt_tail.rfind(think_close);
  return close == std::string_view::npos || close < open;
}

reasoning_parser::reasoning_parser(reasoning_syntax syntax, bool prompt_opened)
    : state_(syntax == reasoning_syntax::none ? state::answering
             : prompt_opened                  ? state::think_start
                                              : state::start),
      drop_open_(syntax == reasoning_syntax::deepseek_r1 || prompt_opened) {}

void reasoning_parser::step(reasoning_split& out) {
  for (;;) {
    switch (state_) {
      case state::start: {  // does the output open with <think>?
        const std::size_t first = pending_.find_first_not_of(" \n\t\r");
        if (first == std::string::npos) return;
        const std::string_view rest = std::string_view(pending_).substr(first);
        if (rest.size() < think_open.size() && think_open.starts_with(rest)) return;
        if (rest.starts_with(think_open)) {
          pending_.erase(0, first + think_open.size());
          drop_open_ = false;
          state_ = state::think_start;
        } else {
          state_ = drop_open_ ? state::thinking : state::answering;  // deepseek_r1 thinks without the tag
        }
        break;
      }
      case state::think_start: {
        const std::size_t first = pending_.find_first_not_of('\n');
        if (first == std::string::npos) {
          pending_.clear();
          return;
        }
        pending_.erase(0, first);
        // A prompt that opened <think> may still see the model write it again.
        if (drop_open_ && pending_.size() < think_open.size() && think_open.starts_with(pending_)) return;
        if (drop_open_ && pending_.starts_with(think_open)) {
          pending_.erase(0, think_open.size());
          drop_open_ = false;
          break;
        }
        drop_open_ = false;
        state_ = state::thinking;
        break;
      }
      case state::thinking: {
        const std::size_t at = pending_.find(think_close);
        const std::size_t keep = at == std::string::npos ? partial_marker_tail(pending_, think_close) : 0;
        const std::string_view text = std::string_view(pending_).substr(0, at == std::string::npos ? pending_.size() - keep : at);
        const std::size_t end = text.find_last_not_of(" \n\t\r");
        if (end != std::string_view::npos) {
          out.reasoning += held_space_;
          out.reasoning += text.substr(0, end + 1);
          held_space_ = std::string(text.substr(end + 1));
        } else {
          held_space_ += text;
        }
        if (at == std::string::npos) {
          pending_.erase(0, pending_.size() - keep);
          return;
        }
        held_space_.clear();
        pending_.erase(0, at + think_close.size());
        state_ = state::answer_start;
        break;
      }
      case state::answer_start: {
        const std::size_t first = pending_.find_first_not_of('\n');
        if (first == std::string::npos) {
          pending_.clear();
          return;
        }
        pending_.erase(0, first);
        state_ = state::answering;
        break;
      }
      case state::answering:
        out.content += pending_;
        pending_.clear();
        return;
    }
  }
}

reasoning_split reasoning_parser::push(std::string_view text) {
  reasoning_split out;
  pending_ += text;
  step(out);
  return out;
}

reasoning_split reasoning_parser::finish() {
  reasoning_split out;
  switch (state_) {
    case state::start: out.content = std::move(pending_); break;  // only spaces, or a partial <think>
    case state::think_start:
    case state::thinking: out.reasoning = std::move(pending_); break;  // never closed
    case state::answer_start:
    case state::answering: out.content = std::move(pending_); break;
  }
  pending_.clear();
  held_space_.clear();
  return out;
}

}  // namespace pagedserve
