#pragma once
// Builds a grammar rule by rule (the GBNF parser's back end): rules as lists of alternatives, code
// point classes turned into UTF-8 byte sequences, quantifiers expanded into helper rules, and the
// checks that keep matching bounded (undefined rules, left recursion, size).
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/grammar.hpp"

namespace pagedserve::grammar {

// Code points [first, last].
using code_point_range = std::pair<char32_t, char32_t>;
using sequence = std::vector<element>;

class grammar_builder {
 public:
  // The rule named `name`, created (undefined) on first mention.
  std::uint32_t rule_named(std::string_view name);
  // A fresh rule named after `base`, for a group or a quantifier.
  std::uint32_t new_rule(std::string_view base);
  void define(std::uint32_t rule, std::vector<sequence> alternatives);
  bool is_defined(std::uint32_t rule) const { return defined_[rule]; }

  element bytes(const byte_set& s);
  element byte(unsigned char b);
  static element ref(std::uint32_t rule) { return {element::kind::rule, rule}; }
  // The bytes of text, one element each.
  void append_literal(sequence& out, std::string_view text);
  // A sequence matching one code point in ranges (sorted or not; negate: any code point but those).
  sequence code_point_class(std::vector<code_point_range> ranges, bool negate, std::string_view rule_base);
  // item repeated min..max times (max < 0: unbounded), as elements to append. Errors past the limits.
  std::expected<sequence, std::string> repeat(const sequence& item, int min, int max, std::string_view rule_base);
  std::size_t size() const { return n_elements_; }

  // The finished grammar rooted at `root`; an error names an undefined rule or left recursion.
  std::expected<grammar, std::string> finish(std::string_view root);
  const std::string& name_of(std::uint32_t rule) const { return names_[rule]; }

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<sequence>> rules_;
  std::vector<bool> defined_;
  std::unordered_map<std::string, std::uint32_t> ids_;
  std::vector<byte_set> sets_;
  std::size_t n_elements_ = 0;
};

}  // namespace pagedserve::grammar
