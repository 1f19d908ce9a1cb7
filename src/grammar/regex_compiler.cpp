#include "grammar/regex_compiler.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <vector>

#include "grammar/grammar.hpp"
#include "pagedserve/utf8.hpp"

namespace pagedserve::grammar {

namespace {

using range = std::pair<char32_t, char32_t>;
using range_set = std::vector<range>;

range_set normalised(range_set r) {
  std::sort(r.begin(), r.end());
  range_set out;
  for (auto [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1)
      out.back().second = std::max(out.back().second, hi);
    else
      out.emplace_back(lo, hi);
  }
  return out;
}

range_set complement(const range_set& r) {
  range_set out;
  char32_t next = 0;
  for (auto [lo, hi] : normalised(r)) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= 0x10FFFF) out.emplace_back(next, 0x10FFFF);
  return out;
}

range_set minus(const range_set& a, const range_set& b) {
  range_set cb = complement(b), out;
  for (auto [alo, ahi] : normalised(a))
    for (auto [blo, bhi] : cb) {
      const char32_t lo = std::max(alo, blo), hi = std::min(ahi, bhi);
      if (lo <= hi) out.emplace_back(lo, hi);
    }
  return out;
}

const range_set digits = {{'0', '9'}};
const range_set word = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMAScript's \s (WhiteSpace and LineTerminator: JSON schema patterns are ECMA-262 regexes).
const range_set space = {{'\t', '\r'}, {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
                         {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const range_set json_forbidden = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};

std::string hex_escape(char32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\U%08X", static_cast<unsigned>(c));
  return buf;
}

std::string class_text(const range_set& r) {
  std::string s = "[";
  for (auto [lo, hi] : normalised(r)) {
    s += hex_escape(lo);
    if (hi != lo) s += "-" + hex_escape(hi);
  }
  return s + "]";
}

class regex_parser {
 public:
  regex_parser(std::string_view pattern, bool json_string) : json_(json_string) {
    for (std::size_t i = 0; i < pattern.size();) {
      const utf8_char ch = utf8_decode(pattern, i);
      text_.push_back(ch.cp);
      i += ch.length;
    }
  }

  std::expected<std::string, std::string> parse() {
    if (peek() == '^') ++pos_;
    std::string expr = alternatives(0);
    if (!error_.empty()) return std::unexpected(error_);
    if (pos_ < text_.size()) return std::unexpected("unbalanced ')' at offset " + std::to_string(pos_));
    return expr;
  }

 private:
  char32_t peek(std::size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : 0; }
  bool done() const { return pos_ >= text_.size() || !error_.empty(); }
  std::string fail(std::string message) {
    if (error_.empty()) error_ = message + " at offset " + std::to_string(pos_);
    return "";
  }

  std::string alternatives(int depth) {
    if (depth > 100) return fail("groups nested too deep");
    std::vector<std::string> alts{sequence(depth)};
    while (!done() && peek() == '|') {
      ++pos_;
      alts.push_back(sequence(depth));
    }
    if (alts.size() == 1) return alts[0];
    std::string s = "(";
    for (std::size_t i = 0; i < alts.size(); ++i) s += (i ? " | " : "") + alts[i];
    return s + ")";
  }

  std::string sequence(int depth) {
    std::string s = "(\"\"";  // an empty literal keeps an empty alternative well formed
    while (!done() && peek() != '|' && peek() != ')') {
      if (peek() == '$' && (pos_ + 1 == text_.size() || text_[pos_ + 1] == ')' || text_[pos_ + 1] == '|')) {
        ++pos_;  // the end anchor is implied
        continue;
      }
      std::string item = atom(depth);
      s += " " + quantified(std::move(item));
    }
    return s + ")";
  }

  std::string quantified(std::string item) {
    const char32_t c = peek();
    std::string q;
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      q = std::string(1, static_cast<char>(c));
    } else if (c == '{' && std::isdigit(static_cast<int>(peek(1)))) {
      const std::size_t start = pos_++;
      q = "{";
      while (!done() && peek() != '}') q += static_cast<char>(text_[pos_++]);
      if (peek() != '}') return fail("unterminated {m,n}");
      ++pos_;
      q += "}";
      (void)start;
    } else {
      return item;
    }
    if (peek() == '?') ++pos_;  // lazy: same language
    if (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{')
      if (peek() != '{' || std::isdigit(static_cast<int>(peek(1)))) return fail("nothing to repeat");
    return "(" + item + ")" + q;
  }

  std::string literal(char32_t c) {
    std::string bytes;
    if (json_ && c == '"') return "\"\\\\\\\"\"";
    if (json_ && c == '\\') return "\"\\\\\\\\\"";
    if (json_ && c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      return gbnf_literal(buf);
    }
    utf8_append(bytes, c);
    return gbnf_literal(bytes);
  }

  std::string char_class(const range_set& r) { return class_text(json_ ? minus(r, json_forbidden) : r); }

  std::string atom(int depth) {
    const char32_t c = text_[pos_++];
    switch (c) {
      case '(': {
        if (peek() == '?') {
          if (peek(1) == ':') {
            pos_ += 2;
          } else if (peek(1) == '<' && peek(2) != '=' && peek(2) != '!') {
            while (!done() && peek() != '>') ++pos_;
            ++pos_;
          } else {
            return fail("lookaround is not supported");
          }
        }
        std::string inner = alternatives(depth + 1);
        if (peek() != ')') return fail("unclosed '('");
        ++pos_;
        return "(" + inner + ")";
      }
      case '[': return bracket();
      case '.': return char_class(complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
      case '\\': return escape(false).text;
      case '*': case '+': case '?': return fail("nothing to repeat");
      case '^': return fail("'^' inside the pattern is not supported");
      default: return literal(c);
    }
  }

  struct escaped {
    std::string text;  // as an atom
    range_set set;     // the code points it matches
  };

  escaped escape(bool in_class) {
    if (done()) return {fail("pattern ends with '\\'"), {}};
    const char32_t e = text_[pos_++];
    auto set_of = [&](range_set s) { return escaped{char_class(s), s}; };
    switch (e) {
      case 'd': return set_of(digits);
      case 'D': return set_of(complement(digits));
      case 'w': return set_of(word);
      case 'W': return set_of(complement(word));
      case 's': return set_of(space);
      case 'S': return set_of(complement(space));
      case 'n': return {literal('\n'), {{'\n', '\n'}}};
      case 'r': return {literal('\r'), {{'\r', '\r'}}};
      case 't': return {literal('\t'), {{'\t', '\t'}}};
      case 'f': return {literal('\f'), {{'\f', '\f'}}};
      case 'v': return {literal('\v'), {{'\v', '\v'}}};
      case '0': return {literal(0), {{0, 0}}};
      case 'x': case 'u': {
        const int n = e == 'x' ? 2 : 4;
        char32_t v = 0;
        for (int i = 0; i < n; ++i) {
          const char32_t h = peek();
          if (!std::isxdigit(static_cast<int>(h))) return {fail("bad \\x or \\u escape"), {}};
          v = v * 16 + static_cast<char32_t>(std::isdigit(static_cast<int>(h)) ? h - '0' : std::tolower(static_cast<int>(h)) - 'a' + 10);
          ++pos_;
        }
        return {literal(v), {{v, v}}};
      }
      case 'b':
        if (in_class) return {literal('\b'), {{'\b', '\b'}}};
        return {fail("word boundaries are not supported"), {}};
      default:
        if (e >= '1' && e <= '9') return {fail("backreferences are not supported"), {}};
        if (std::isalnum(static_cast<int>(e))) return {fail(std::string("unknown escape '\\") + static_cast<char>(e) + "'"), {}};
        return {literal(e), {{e, e}}};
    }
  }

  std::string bracket() {
    const bool negate = peek() == '^';
    if (negate) ++pos_;
    range_set set;
    bool first = true;
    while (!done() && (peek() != ']' || first)) {
      first = false;
      range_set lo_set;
      char32_t lo = 0;
      if (peek() == '\\') {
        ++pos_;
        escaped e = escape(true);
        if (e.set.size() != 1 || e.set[0].first != e.set[0].second) {
          set.insert(set.end(), e.set.begin(), e.set.end());
          continue;
        }
        lo = e.set[0].first;
      } else {
        lo = text_[pos_++];
      }
      char32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        if (peek() == '\\') {
          ++pos_;
          escaped e = escape(true);
          if (e.set.size() != 1 || e.set[0].first != e.set[0].second) return fail("bad class range");
          hi = e.set[0].first;
        } else {
          hi = text_[pos_++];
        }
        if (hi < lo) return fail("class range out of order");
      }
      set.emplace_back(lo, hi);
    }
    if (peek() != ']') return fail("unterminated '['");
    ++pos_;
    return char_class(negate ? complement(set) : set);
  }

  std::vector<char32_t> text_;
  std::size_t pos_ = 0;
  bool json_;
  std::string error_;
};

}  // namespace

std::string gbnf_literal(std::string_view text) {
  std::string s = "\"";
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      s += '\\';
      s += ch;
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      s += buf;
    } else {
      s += ch;
    }
  }
  return s + "\"";
}

std::expected<std::string, std::string> regex_to_gbnf(std::string_view pattern, bool json_string) {
  return regex_parser(pattern, json_string).parse();
}

}  // namespace pagedserve::grammar
