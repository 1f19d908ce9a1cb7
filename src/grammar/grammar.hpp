#pragma once
// A context-free grammar over bytes, flattened for the matcher: every rule is a set of alternatives,
// every alternative a run of elements ending in an `end` element, all in one array so a position in
// the grammar is one index (llama.cpp's layout). Code points are compiled to their UTF-8 bytes when
// the grammar is built, so matching never decodes UTF-8 and a token may end inside a character.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace pagedserve::grammar {

// A set of byte values.
struct byte_set {
  std::array<std::uint64_t, 4> bits{};
  bool contains(unsigned char b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void add(unsigned char b) { bits[b >> 6] |= std::uint64_t{1} << (b & 63); }
  void add_range(unsigned char lo, unsigned char hi) {
    for (unsigned b = lo; b <= hi; ++b) add(static_cast<unsigned char>(b));
  }
  friend bool operator==(const byte_set&, const byte_set&) = default;
};

struct element {
  enum class kind : std::uint8_t { end, bytes, rule };
  kind type = kind::end;
  std::uint32_t index = 0;  // bytes: into grammar::sets; rule: the rule id
};

struct grammar {
  std::vector<element> elements;                         // every alternative, each closed by an `end`
  std::vector<byte_set> sets;                            // the byte sets `bytes` elements name
  std::vector<std::vector<std::uint32_t>> alternatives;  // per rule: where each alternative starts
  std::vector<std::string> rule_names;                   // per rule, for messages
  std::uint32_t root = 0;                                // the rule a whole output must match
};

// Limits that keep a pathological grammar from costing unbounded time or memory.
inline constexpr std::size_t max_grammar_elements = 1 << 20;  // after quantifiers are expanded
inline constexpr int max_repetition = 10000;                  // the largest n of {m,n}
inline constexpr std::size_t max_grammar_rules = 50000;       // helper rules included
inline constexpr int max_group_nesting = 256;                 // parentheses inside parentheses

}  // namespace pagedserve::grammar
