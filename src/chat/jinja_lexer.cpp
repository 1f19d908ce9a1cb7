// Template text to tokens, with jinja2's whitespace handling as transformers configures it
// (trim_blocks and lstrip_blocks on, keep_trailing_newline off). Whitespace control is decided
// here, once, so the evaluator writes text nodes verbatim. The rules follow jinja2's lexer.py:
//   - line endings are normalised to "\n" and one trailing newline of the template is dropped;
//   - "{%-", "{{-", "{#-" strip all whitespace before the tag; "-%}", "-}}", "-#}" all after it;
//   - trim_blocks: "%}" and "#}" swallow one directly following "\n" ("+%}" keeps it);
//   - lstrip_blocks: spaces and tabs between a line start and "{%" or "{#" are dropped ("{%+"
//     keeps them); "{{" is never lstripped.
#include <algorithm>
#include <charconv>

#include "chat/jinja_ast.hpp"
#include "pagedserve/utf8.hpp"

namespace pagedserve::jinja {
namespace {

std::string normalize_newlines(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out += src[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Python's str.rstrip() (Unicode whitespace).
std::string_view rstrip_space(std::string_view s) {
  auto chars = utf8_chars(s);
  while (!chars.empty() && py_isspace(chars.back())) chars.pop_back();
  return chars.empty() ? s.substr(0, 0)
                       : s.substr(0, static_cast<std::size_t>(chars.back().data() + chars.back().size() - s.data()));
}

// Length of the run of (Unicode) whitespace at the start of s; looks no further than the run.
std::size_t space_prefix(std::string_view s) {
  std::size_t n = 0;
  while (n < s.size()) {
    const std::string_view ch = utf8_chars(s.substr(n, 4)).front();
    if (!py_isspace(ch)) break;
    n += ch.size();
  }
  return n;
}

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

class lexer {
 public:
  explicit lexer(std::string src) : src_(std::move(src)) {}

  result<std::vector<token>> run() {
    while (pos_ < src_.size()) {
      const std::size_t start = find_tag(pos_);
      const bool line_starting = pos_ == 0 || src_[pos_ - 1] == '\n';
      std::string_view text = std::string_view(src_).substr(pos_, start - pos_);
      if (start == src_.size()) {
        emit_text(text);
        pos_ = start;
        break;
      }
      const char kind = src_[start + 1];  // '{', '%' or '#'
      const char sign = start + 2 < src_.size() ? src_[start + 2] : '\0';
      if (sign == '-') {
        text = rstrip_space(text);
      } else if (sign != '+' && kind != '{') {  // lstrip_blocks
        const std::size_t nl = text.rfind('\n');
        const std::size_t l_pos = nl == text.npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting) && l_pos < text.size() &&
            space_prefix(text.substr(l_pos)) == text.size() - l_pos)
          text = text.substr(0, l_pos);
      }
      emit_text(text);
      line_ += static_cast<int>(std::count(src_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                           src_.begin() + static_cast<std::ptrdiff_t>(start), '\n'));
      pos_ = start + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (kind == '#') {
        JINJA_CHECK(skip_comment());
      } else {
        JINJA_CHECK(lex_tag(kind == '{'));
      }
    }
    tokens_.push_back({token_kind::eof, "", line_});
    return std::move(tokens_);
  }

 private:
  std::size_t find_tag(std::size_t from) const {
    for (std::size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1))
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return src_.size();
  }

  void emit_text(std::string_view text) {
    if (!text.empty()) tokens_.push_back({token_kind::text, std::string(text), line_});
  }

  void advance(std::size_t n) {
    line_ += static_cast<int>(std::count(src_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                         src_.begin() + static_cast<std::ptrdiff_t>(pos_ + n), '\n'));
    pos_ += n;
  }

  // What follows a closing "-%}", "%}" or "+%}": strip all whitespace, one newline, or nothing.
  void after_close(char sign, bool trim_newline) {
    if (sign == '-')
      advance(space_prefix(std::string_view(src_).substr(pos_)));
    else if (sign != '+' && trim_newline && pos_ < src_.size() && src_[pos_] == '\n')
      advance(1);
  }

  result<void> skip_comment() {
    const int start_line = line_;
    const std::size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) return fail("line " + std::to_string(start_line) + ": missing end of comment tag");
    const char sign = end > pos_ ? src_[end - 1] : '\0';
    advance(end + 2 - pos_);
    after_close(sign, true);
    return {};
  }

  result<void> lex_tag(bool is_var) {
    const int start_line = line_;
    tokens_.push_back({is_var ? token_kind::var_begin : token_kind::block_begin, "", line_});
    std::string brackets;  // closing brackets still expected
    while (true) {
      advance(space_prefix(std::string_view(src_).substr(pos_)));
      if (pos_ >= src_.size())
        return fail("line " + std::to_string(start_line) + ": unexpected end of template, expected '" +
                    (is_var ? "}}" : "%}") + "'");
      const std::string_view rest = std::string_view(src_).substr(pos_);
      if (brackets.empty()) {
        const std::string_view close = is_var ? "}}" : "%}";
        const char sign = rest[0];
        const bool signed_close = (sign == '-' || (sign == '+' && !is_var)) && rest.substr(1).starts_with(close);
        if (signed_close || rest.starts_with(close)) {
          tokens_.push_back({is_var ? token_kind::var_end : token_kind::block_end, "", line_});
          advance(close.size() + (signed_close ? 1 : 0));
          after_close(signed_close ? sign : '\0', !is_var);
          return {};
        }
      }
      const char c = rest[0];
      if (c == '\'' || c == '"') {
        JINJA_CHECK(lex_string(c));
      } else if (is_digit(c)) {
        JINJA_CHECK(lex_number());
      } else if (is_name_start(c)) {
        std::size_t n = 1;
        while (n < rest.size() && (is_name_start(rest[n]) || is_digit(rest[n]))) ++n;
        tokens_.push_back({token_kind::name, std::string(rest.substr(0, n)), line_});
        advance(n);
      } else {
        static constexpr std::string_view two[] = {"//", "**", "==", "!=", "<=", ">="};
        std::size_t n = 0;
        for (std::string_view op : two)
          if (rest.starts_with(op)) n = 2;
        if (n == 0 && std::string_view("+-*/%~()[]{},.:|=<>").find(c) != std::string_view::npos) n = 1;
        if (n == 0) return fail("line " + std::to_string(line_) + ": unexpected character '" + std::string(1, c) + "'");
        if (c == '(' || c == '[' || c == '{') {
          brackets += c == '(' ? ')' : c == '[' ? ']' : '}';
        } else if (c == ')' || c == ']' || c == '}') {
          if (brackets.empty() || brackets.back() != c)
            return fail("line " + std::to_string(line_) + ": unexpected '" + std::string(1, c) + "'");
          brackets.pop_back();
        }
        tokens_.push_back({token_kind::op, std::string(rest.substr(0, n)), line_});
        advance(n);
      }
    }
  }

  // Python string-literal escapes, as jinja2 decodes them (unicode-escape).
  result<void> lex_string(char quote) {
    const int start_line = line_;
    std::string out;
    std::size_t i = pos_ + 1;
    for (;; ++i) {
      if (i >= src_.size()) return fail("line " + std::to_string(start_line) + ": unterminated string");
      const char c = src_[i];
      if (c == quote) break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (++i >= src_.size()) return fail("line " + std::to_string(start_line) + ": unterminated string");
      const char e = src_[i];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'v':
          out += '\v';
          break;
        case '\\':
        case '\'':
        case '"':
          out += e;
          break;
        case '\n':
          break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          const std::size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          std::uint32_t cp = 0;
          if (i + n >= src_.size() || !std::all_of(src_.begin() + static_cast<std::ptrdiff_t>(i + 1),
                                                   src_.begin() + static_cast<std::ptrdiff_t>(i + 1 + n), is_hex))
            return fail("line " + std::to_string(line_) + ": truncated \\" + std::string(1, e) + " escape");
          std::from_chars(src_.data() + i + 1, src_.data() + i + 1 + n, cp, 16);
          if (cp > 0x10FFFF) return fail("line " + std::to_string(line_) + ": illegal Unicode character");
          utf8_append(out, static_cast<char32_t>(cp));
          i += n;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {  // up to three octal digits
            std::uint32_t cp = 0;
            std::size_t n = 0;
            for (; n < 3 && i + n < src_.size() && src_[i + n] >= '0' && src_[i + n] <= '7'; ++n)
              cp = cp * 8 + static_cast<std::uint32_t>(src_[i + n] - '0');
            utf8_append(out, static_cast<char32_t>(cp));
            i += n - 1;
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    tokens_.push_back({token_kind::string, std::move(out), start_line});
    advance(i + 1 - pos_);
    return {};
  }

  // 12, 1_000, 3.5, 1e-5, 2.5E3 (jinja2 number syntax without the 0x/0o/0b forms).
  result<void> lex_number() {
    const std::string_view rest = std::string_view(src_).substr(pos_);
    std::size_t n = 0;
    auto digits = [&] {
      const std::size_t s = n;
      while (n < rest.size() &&
             (is_digit(rest[n]) || (rest[n] == '_' && n > s && n + 1 < rest.size() && is_digit(rest[n + 1]))))
        ++n;
      return n > s;
    };
    digits();
    bool is_float = false;
    if (n + 1 < rest.size() && rest[n] == '.' && is_digit(rest[n + 1])) {
      ++n;
      digits();
      is_float = true;
    }
    if (n < rest.size() && (rest[n] == 'e' || rest[n] == 'E')) {
      const std::size_t save = n++;
      if (n < rest.size() && (rest[n] == '+' || rest[n] == '-')) ++n;
      if (digits())
        is_float = true;
      else
        n = save;
    }
    std::string text(rest.substr(0, n));
    std::erase(text, '_');
    token t{is_float ? token_kind::floating : token_kind::integer, text, line_};
    if (is_float) {
      std::from_chars(text.data(), text.data() + text.size(), t.float_value);
    } else if (std::from_chars(text.data(), text.data() + text.size(), t.int_value).ec != std::errc{}) {
      return fail("line " + std::to_string(line_) + ": integer literal too large");
    }
    tokens_.push_back(std::move(t));
    advance(n);
    return {};
  }

  std::string src_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::vector<token> tokens_;
};

}  // namespace

result<std::vector<token>> lex(std::string_view source) { return lexer(normalize_newlines(source)).run(); }

}  // namespace pagedserve::jinja
