#include "grammar/gbnf_parser.hpp"

#include <cctype>

#include "grammar/grammar_builder.hpp"
#include "pagedserve/utf8.hpp"

namespace pagedserve::grammar {

namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

struct parse_failure {
  std::size_t at;
  std::string message;
};

class gbnf_parser {
 public:
  explicit gbnf_parser(std::string_view text) : text_(text) {}

  std::expected<grammar, std::string> parse(std::string_view prefix, std::string_view suffix) {
    try {
      skip_space();
      if (at_end()) throw parse_failure{pos_, "empty grammar"};
      while (!at_end()) {
        const std::size_t start = pos_;
        const std::string name = read_name();
        skip_space();
        if (!consume("::=")) throw parse_failure{pos_, "expected '::=' after rule name '" + name + "'"};
        const std::uint32_t rule = builder_.rule_named(name);
        if (builder_.is_defined(rule)) throw parse_failure{start, "rule '" + name + "' defined twice"};
        builder_.define(rule, parse_alternatives(name, false));
        skip_space();
      }
    } catch (const parse_failure& f) {
      return std::unexpected(where(f.at) + f.message);
    }
    std::string root = "root";
    if (!prefix.empty() || !suffix.empty()) {
      const std::uint32_t wrapped = builder_.new_rule("root-with-prefix-suffix");
      sequence seq;
      builder_.append_literal(seq, prefix);
      seq.push_back(grammar_builder::ref(builder_.rule_named("root")));
      builder_.append_literal(seq, suffix);
      builder_.define(wrapped, {seq});
      root = builder_.name_of(wrapped);
    }
    auto g = builder_.finish(root);
    if (!g) {
      // Undefined rules are reported where they were first used.
      const std::string prefix = "undefined rule '";
      if (g.error().starts_with(prefix)) {
        const std::string name = g.error().substr(prefix.size(), g.error().size() - prefix.size() - 1);
        if (auto it = first_use_.find(name); it != first_use_.end()) return std::unexpected(where(it->second) + g.error());
      }
      return std::unexpected(g.error());
    }
    return g;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  bool consume(std::string_view s) {
    if (text_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }

  std::string where(std::size_t at) const {
    int line = 1, column = 1;
    for (std::size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": ";
  }

  void skip_space() {
    while (!at_end()) {
      if (std::isspace(static_cast<unsigned char>(peek()))) {
        ++pos_;
      } else if (peek() == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string read_name() {
    const std::size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (pos_ == start) throw parse_failure{pos_, "expected a rule name"};
    return std::string(text_.substr(start, pos_ - start));
  }

  // True when a `name ::=` starts here: the next rule, which ends the current one.
  bool at_rule_start() const {
    std::size_t p = pos_;
    while (p < text_.size() && is_name_char(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\n' || text_[p] == '\r')) ++p;
    return text_.substr(p, 3) == "::=";
  }

  std::vector<sequence> parse_alternatives(const std::string& rule_name, bool nested) {
    std::vector<sequence> alternatives;
    alternatives.push_back(parse_sequence(rule_name, nested));
    while (peek() == '|') {
      ++pos_;
      alternatives.push_back(parse_sequence(rule_name, nested));
    }
    return alternatives;
  }

  sequence parse_sequence(const std::string& rule_name, bool nested) {
    sequence seq;
    std::size_t item_start = 0;  // where the last item begins in seq, for a quantifier
    bool have_item = false;
    for (;;) {
      skip_space();
      if (at_end() || peek() == '|' || peek() == ')') break;
      if (!nested && at_rule_start()) break;
      const std::size_t at = pos_;
      const char c = peek();
      if (c == '"') {
        item_start = seq.size();
        ++pos_;
        std::string bytes;
        while (!at_end() && peek() != '"') utf8_append(bytes, read_char());
        if (!consume("\"")) throw parse_failure{at, "unterminated string literal"};
        builder_.append_literal(seq, bytes);
        have_item = !bytes.empty();
      } else if (c == '[') {
        item_start = seq.size();
        const sequence cls = parse_class(rule_name);
        seq.insert(seq.end(), cls.begin(), cls.end());
        have_item = true;
      } else if (c == '.') {
        ++pos_;
        item_start = seq.size();
        const sequence any = builder_.code_point_class({}, true, rule_name);
        seq.insert(seq.end(), any.begin(), any.end());
        have_item = true;
      } else if (c == '(') {
        if (++nesting_ > max_group_nesting) throw parse_failure{at, "groups nested too deep"};
        ++pos_;
        const std::uint32_t group = builder_.new_rule(rule_name);
        builder_.define(group, parse_alternatives(rule_name, true));
        skip_space();
        if (!consume(")")) throw parse_failure{at, "unclosed '('"};
        --nesting_;
        item_start = seq.size();
        seq.push_back(grammar_builder::ref(group));
        have_item = true;
      } else if (is_name_char(c)) {
        const std::string name = read_name();
        first_use_.try_emplace(name, at);
        item_start = seq.size();
        seq.push_back(grammar_builder::ref(builder_.rule_named(name)));
        have_item = true;
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_item) throw parse_failure{at, std::string("'") + c + "' has nothing to repeat"};
        int min = 0, max = -1;
        ++pos_;
        if (c == '+') min = 1;
        if (c == '?') max = 1;
        if (c == '{') parse_bounds(at, min, max);
        const sequence item(seq.begin() + static_cast<std::ptrdiff_t>(item_start), seq.end());
        auto repeated = builder_.repeat(item, min, max, rule_name);
        if (!repeated) throw parse_failure{at, repeated.error()};
        seq.resize(item_start);
        seq.insert(seq.end(), repeated->begin(), repeated->end());
        have_item = false;
      } else {
        throw parse_failure{at, std::string("unexpected character '") + c + "'"};
      }
    }
    return seq;
  }

  void parse_bounds(std::size_t at, int& min, int& max) {
    auto number = [&]() {
      skip_space();
      if (!std::isdigit(static_cast<unsigned char>(peek()))) throw parse_failure{pos_, "expected a number in {m,n}"};
      long v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        v = v * 10 + (peek() - '0');
        if (v > max_repetition) throw parse_failure{at, "repetition count above " + std::to_string(max_repetition)};
        ++pos_;
      }
      skip_space();
      return static_cast<int>(v);
    };
    min = number();
    if (consume(",")) {
      skip_space();
      max = peek() == '}' ? -1 : number();
    } else {
      max = min;
    }
    if (!consume("}")) throw parse_failure{pos_, "expected '}'"};
    if (max >= 0 && max < min) throw parse_failure{at, "repetition {m,n} with n < m"};
  }

  sequence parse_class(const std::string& rule_name) {
    const std::size_t at = pos_;
    ++pos_;  // '['
    const bool negate = consume("^");
    std::vector<code_point_range> ranges;
    while (!at_end() && peek() != ']') {
      const char32_t lo = read_char();
      char32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        hi = read_char();
        if (hi < lo) throw parse_failure{at, "character range out of order"};
      }
      ranges.emplace_back(lo, hi);
    }
    if (!consume("]")) throw parse_failure{at, "unterminated character class"};
    return builder_.code_point_class(std::move(ranges), negate, rule_name);
  }

  // One character of a literal or class: an escape or one UTF-8 encoded code point.
  char32_t read_char() {
    const std::size_t at = pos_;
    if (at_end()) throw parse_failure{at, "unexpected end of grammar"};
    const unsigned char c = static_cast<unsigned char>(text_[pos_++]);
    if (c == '\\') {
      if (at_end()) throw parse_failure{at, "unfinished escape"};
      const char e = text_[pos_++];
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '0': return 0;
        case 'x': return read_hex(2, at);
        case 'u': return read_hex(4, at);
        case 'U': return read_hex(8, at);
        case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/': case '.':
          return static_cast<unsigned char>(e);
        default: throw parse_failure{at, std::string("unknown escape '\\") + e + "'"};
      }
    }
    if (c < 0x80) return c;
    const int n = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
    if (n < 0) throw parse_failure{at, "invalid UTF-8"};
    char32_t cp = c & (0x3F >> n);
    for (int i = 0; i < n; ++i) {
      if (at_end() || (static_cast<unsigned char>(peek()) & 0xC0) != 0x80) throw parse_failure{at, "invalid UTF-8"};
      cp = (cp << 6) | (static_cast<unsigned char>(text_[pos_++]) & 0x3F);
    }
    return cp;
  }

  char32_t read_hex(int digits, std::size_t at) {
    char32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char h = peek();
      if (!std::isxdigit(static_cast<unsigned char>(h))) throw parse_failure{at, "bad hexadecimal escape"};
      v = v * 16 + static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
      ++pos_;
    }
    if (v > 0x10FFFF) throw parse_failure{at, "code point above U+10FFFF"};
    return v;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int nesting_ = 0;
  grammar_builder builder_;
  std::unordered_map<std::string, std::size_t> first_use_;
};

}  // namespace

std::expected<grammar, std::string> parse_gbnf(std::string_view text, std::string_view prefix,
                                               std::string_view suffix) {
  return gbnf_parser(text).parse(prefix, suffix);
}

}  // namespace pagedserve::grammar
