#include "grammar/grammar_builder.hpp"

#include <algorithm>

#include "pagedserve/utf8.hpp"

namespace pagedserve::grammar {

namespace {

constexpr char32_t max_code_point = 0x10FFFF;

std::string utf8_of(char32_t c) {
  std::string s;
  utf8_append(s, c);
  return s;
}

// Splits [lo, hi] into ranges whose UTF-8 encodings differ only by a byte range at each position
// (RE2's and Rust regex's construction): each comes out as one list of per-byte ranges.
void utf8_sequences(char32_t lo, char32_t hi, std::vector<std::vector<std::pair<unsigned char, unsigned char>>>& out) {
  if (lo > hi) return;
  if (lo <= 0xDFFF && hi >= 0xD800) {  // surrogates have no UTF-8 form
    if (lo < 0xD800) utf8_sequences(lo, 0xD7FF, out);
    if (hi > 0xDFFF) utf8_sequences(0xE000, hi, out);
    return;
  }
  for (char32_t max : {char32_t{0x7F}, char32_t{0x7FF}, char32_t{0xFFFF}})
    if (lo <= max && hi > max) {
      utf8_sequences(lo, max, out);
      utf8_sequences(max + 1, hi, out);
      return;
    }
  if (hi < 0x80) {
    out.push_back({{static_cast<unsigned char>(lo), static_cast<unsigned char>(hi)}});
    return;
  }
  for (int i = 1; i < 4; ++i) {
    const char32_t m = (char32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_sequences(lo, lo | m, out);
        utf8_sequences((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        utf8_sequences(lo, (hi & ~m) - 1, out);
        utf8_sequences(hi & ~m, hi, out);
        return;
      }
    }
  }
  const std::string a = utf8_of(lo), b = utf8_of(hi);
  std::vector<std::pair<unsigned char, unsigned char>> seq;
  for (std::size_t k = 0; k < a.size(); ++k) seq.emplace_back(a[k], b[k]);
  out.push_back(std::move(seq));
}

}  // namespace

std::uint32_t grammar_builder::rule_named(std::string_view name) {
  if (auto it = ids_.find(std::string(name)); it != ids_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(names_.size());
  names_.emplace_back(name);
  rules_.emplace_back();
  defined_.push_back(false);
  ids_.emplace(std::string(name), id);
  return id;
}

std::uint32_t grammar_builder::new_rule(std::string_view base) {
  for (std::size_t n = names_.size();; ++n) {
    // "~" is no name character of GBNF text: a generated rule never takes the name of one defined later.
    std::string name = std::string(base) + "~" + std::to_string(n);
    if (!ids_.contains(name)) return rule_named(name);
  }
}

void grammar_builder::define(std::uint32_t rule, std::vector<sequence> alternatives) {
  for (const sequence& s : alternatives) n_elements_ += s.size() + 1;
  rules_[rule] = std::move(alternatives);
  defined_[rule] = true;
}

element grammar_builder::bytes(const byte_set& s) {
  auto it = std::find(sets_.begin(), sets_.end(), s);
  if (it == sets_.end()) it = sets_.insert(sets_.end(), s);
  return {element::kind::bytes, static_cast<std::uint32_t>(it - sets_.begin())};
}

element grammar_builder::byte(unsigned char b) {
  byte_set s;
  s.add(b);
  return bytes(s);
}

void grammar_builder::append_literal(sequence& out, std::string_view text) {
  for (char c : text) out.push_back(byte(static_cast<unsigned char>(c)));
}

sequence grammar_builder::code_point_class(std::vector<code_point_range> ranges, bool negate, std::string_view rule_base) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<code_point_range> merged;
  for (auto [lo, hi] : ranges) {
    if (lo > hi) continue;
    if (!merged.empty() && lo <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, hi);
    else
      merged.emplace_back(lo, hi);
  }
  if (negate) {
    std::vector<code_point_range> complement;
    char32_t next = 0;
    for (auto [lo, hi] : merged) {
      if (lo > next) complement.emplace_back(next, lo - 1);
      next = hi + 1;
    }
    if (next <= max_code_point) complement.emplace_back(next, max_code_point);
    merged = std::move(complement);
  }
  std::vector<std::vector<std::pair<unsigned char, unsigned char>>> seqs;
  for (auto [lo, hi] : merged) utf8_sequences(lo, std::min(hi, max_code_point), seqs);
  byte_set single;
  bool any_single = false;
  std::vector<sequence> alternatives;
  for (const auto& seq : seqs) {
    if (seq.size() == 1) {
      single.add_range(seq[0].first, seq[0].second);
      any_single = true;
      continue;
    }
    sequence alt;
    for (auto [lo, hi] : seq) {
      byte_set s;
      s.add_range(lo, hi);
      alt.push_back(bytes(s));
    }
    alternatives.push_back(std::move(alt));
  }
  if (alternatives.empty()) return {bytes(single)};  // an empty set matches nothing, as it should
  if (any_single) alternatives.insert(alternatives.begin(), sequence{bytes(single)});
  const std::uint32_t rule = new_rule(rule_base);
  define(rule, std::move(alternatives));
  return {ref(rule)};
}

std::expected<sequence, std::string> grammar_builder::repeat(const sequence& item, int min, int max,
                                                            std::string_view rule_base) {
  if (min < 0 || min > max_repetition || max > max_repetition || (max >= 0 && max < min))
    return std::unexpected("repetition {" + std::to_string(min) + "," + std::to_string(max) + "} out of range");
  sequence unit = item;
  if (item.size() != 1) {
    const std::uint32_t wrapped = new_rule(rule_base);
    define(wrapped, {item});
    unit = {ref(wrapped)};
  }
  sequence out;
  for (int i = 0; i < min; ++i) out.push_back(unit[0]);
  if (max < 0) {  // R ::= unit R | ε: the tail call keeps the matcher's stack flat
    const std::uint32_t star = new_rule(rule_base);
    define(star, {{unit[0], ref(star)}, {}});
    out.push_back(ref(star));
  } else if (max > min) {  // O_k ::= unit O_{k-1} | ε
    std::uint32_t previous = 0;
    for (int k = 1; k <= max - min; ++k) {
      const std::uint32_t optional = new_rule(rule_base);
      define(optional, k == 1 ? std::vector<sequence>{{unit[0]}, {}}
                              : std::vector<sequence>{{unit[0], ref(previous)}, {}});
      previous = optional;
    }
    out.push_back(ref(previous));
  }
  n_elements_ += out.size();
  if (n_elements_ > max_grammar_elements) return std::unexpected("grammar too large after expanding repetitions");
  return out;
}

std::expected<grammar, std::string> grammar_builder::finish(std::string_view root_name) {
  if (!ids_.contains(std::string(root_name)) || !defined_[ids_.at(std::string(root_name))])
    return std::unexpected("no rule named '" + std::string(root_name) + "'");
  for (std::size_t r = 0; r < rules_.size(); ++r)
    if (!defined_[r]) return std::unexpected("undefined rule '" + names_[r] + "'");
  if (n_elements_ > max_grammar_elements || rules_.size() > max_grammar_rules) return std::unexpected("grammar too large");
  // Nullable rules, to the fixpoint; then left recursion (a rule reachable from itself without
  // consuming a byte) would make the matcher expand forever, so it is refused.
  const std::size_t n = rules_.size();
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const sequence& alt : rules_[r])
        if (std::all_of(alt.begin(), alt.end(),
                        [&](element e) { return e.type == element::kind::rule && nullable[e.index]; })) {
          nullable[r] = changed = true;
          break;
        }
    }
  }
  std::vector<std::vector<std::uint32_t>> left(n);
  for (std::size_t r = 0; r < n; ++r)
    for (const sequence& alt : rules_[r])
      for (element e : alt) {
        if (e.type != element::kind::rule) break;
        left[r].push_back(e.index);
        if (!nullable[e.index]) break;
      }
  // Depth-first, with an explicit stack: a long chain of rules must not overflow the thread's.
  std::vector<int> colour(n, 0);  // 0 unvisited, 1 on the path, 2 done
  for (std::uint32_t first = 0; first < n; ++first) {
    if (colour[first] != 0) continue;
    std::vector<std::pair<std::uint32_t, std::size_t>> path{{first, 0}};  // rule, next edge
    colour[first] = 1;
    while (!path.empty()) {
      auto& [r, edge] = path.back();
      if (edge == left[r].size()) {
        colour[r] = 2;
        path.pop_back();
        continue;
      }
      const std::uint32_t next = left[r][edge++];
      if (colour[next] == 1) return std::unexpected("left recursion through rule '" + names_[next] + "'");
      if (colour[next] == 0) {
        colour[next] = 1;
        path.emplace_back(next, 0);
      }
    }
  }

  grammar g;
  g.sets = sets_;
  g.rule_names = names_;
  g.root = ids_.at(std::string(root_name));
  g.alternatives.resize(n);
  for (std::size_t r = 0; r < n; ++r)
    for (const sequence& alt : rules_[r]) {
      g.alternatives[r].push_back(static_cast<std::uint32_t>(g.elements.size()));
      g.elements.insert(g.elements.end(), alt.begin(), alt.end());
      g.elements.push_back({});
    }
  return g;
}

}  // namespace pagedserve::grammar
