#pragma once
// Where an output is in a grammar: the set of pushdown stacks that the bytes so far can have led to
// (llama.cpp's stack set), advanced one byte at a time. Stacks are persistent lists hash-consed in
// an arena, so equal stacks are one id; stack sets are interned too, and "set s reads byte b" is a
// table lookup once computed: a token-mask walk re-reads the same few steps hundreds of thousands
// of times.
#include <array>
#include <cstdint>
#include <string>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.hpp"

namespace pagedserve::grammar {

// Caps that bound the work per byte whatever the grammar (past them a stack is dropped).
inline constexpr std::uint32_t max_stack_depth = 1024;
inline constexpr std::size_t max_stack_set = 1024;
inline constexpr std::size_t max_arena_nodes = std::size_t{1} << 21;
inline constexpr std::size_t max_interned_sets = 4096;  // each holds a 1 KiB transition row

class grammar_matcher {
 public:
  using state = std::vector<std::uint32_t>;  // sorted stack ids; id 0 is the empty stack (complete)
  using set_id = std::uint32_t;              // an interned state; 0 is the empty set (no way on)

  explicit grammar_matcher(std::shared_ptr<const grammar> g);

  // Advances by bytes; false (and no change) when the grammar cannot continue with them.
  bool accept(std::string_view bytes);
  bool can_end() const { return !current().empty() && current().front() == 0; }      // the whole is complete
  bool must_end() const { return current().size() == 1 && current().front() == 0; }  // and nothing may follow
  bool dead() const { return current_ == 0; }
  const state& current() const { return sets_[current_]; }
  set_id current_set() const { return current_; }

  // The set `from` leads to on byte b (0: b is not allowed there), memoised.
  set_id step(set_id from, unsigned char b);

  // to = the stacks `from` leads to on byte b (empty: b is not allowed there).
  void advance(const state& from, unsigned char b, state& to);
  // Keeps the arena bounded on long outputs: rebuilt from the current stacks when it grows too big.
  bool compact_if_large();  // true when it did (stack and set ids changed)

 private:
  struct node {
    std::uint32_t pos;     // element index of the next thing to match
    std::uint32_t parent;  // the stack below
    std::uint32_t depth;
  };
  std::uint32_t intern(std::uint32_t pos, std::uint32_t parent);
  // Appends to out the stacks with a byte set on top (or the empty stack) that stack n stands for.
  void expand(std::uint32_t n, state& out);
  void normalise(state& s) const;
  set_id intern_set(state s);

  std::shared_ptr<const grammar> grammar_;
  std::vector<node> nodes_;
  std::unordered_map<std::uint64_t, std::uint32_t> interned_;     // (pos, parent) -> id
  std::unordered_map<std::uint64_t, state> steps_;               // (id, byte) -> stacks
  std::vector<state> sets_;                                       // set id -> stacks
  std::unordered_map<std::string, set_id> set_ids_;               // stacks' bytes -> set id
  std::vector<std::array<set_id, 256>> transitions_;              // set id, byte -> set id
  set_id current_ = 0;
};

}  // namespace pagedserve::grammar
