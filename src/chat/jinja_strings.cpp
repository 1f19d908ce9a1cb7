// Python str operations on UTF-8 bytes. Python strings are sequences of code points, and
// templates call strip(), split(), title() and slicing on message text, so these work per code
// point and use Python's definitions (Unicode whitespace for strip, for example: the Llama 3
// template trims message content). Case mapping covers ASCII, Latin-1, Greek and Cyrillic.
#include "pagedserve/utf8.hpp"
#include <algorithm>
#include <cstdio>

#include "chat/jinja_value.hpp"

namespace pagedserve::jinja {
namespace {

bool cp_isspace(std::uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::uint32_t cp_upper(std::uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7) || (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) || (c >= 0x430 && c <= 0x44F))
    return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

std::uint32_t cp_lower(std::uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if ((c >= 0xC0 && c <= 0xDE && c != 0xD7) || (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) || (c >= 0x410 && c <= 0x42F))
    return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

bool cp_cased(std::uint32_t c) { return cp_upper(c) != c || cp_lower(c) != c; }

// Applies f to every code point; valid multi-byte characters are re-encoded.
template <class F>
std::string map_chars(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  for (std::string_view ch : utf8_chars(s)) {
    if (ch.size() == 1 && static_cast<unsigned char>(ch[0]) >= 0x80)
      out += ch;  // stray byte: keep as is
    else
      utf8_append(out, static_cast<char32_t>(f(char_code_point(ch))));
  }
  return out;
}

bool cp_printable(std::uint32_t c) {
  if (c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0xA0) || c == 0xAD) return false;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F)) return false;
  if ((c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF || (c >= 0xD800 && c <= 0xDFFF)) return false;
  return true;
}

}  // namespace

std::uint32_t char_code_point(std::string_view ch) {
  return ch.size() == 1 ? static_cast<unsigned char>(ch[0]) : static_cast<std::uint32_t>(utf8_decode(ch, 0).cp);
}

// Invalid bytes (never in text that came through JSON) are characters of their own, as stray bytes.
std::vector<std::string_view> utf8_chars(std::string_view s) {
  std::vector<std::string_view> out;
  out.reserve(s.size());
  for (std::size_t pos = 0; pos < s.size();) {
    const utf8_char ch = utf8_decode(s, pos);
    const std::size_t n = ch.status == utf8_status::complete ? ch.length : 1;
    out.push_back(s.substr(pos, n));
    pos += n;
  }
  return out;
}

bool py_isspace(std::string_view ch) { return !ch.empty() && cp_isspace(char_code_point(ch)); }

std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  const auto cs = utf8_chars(s);
  const auto set = chars ? utf8_chars(*chars) : std::vector<std::string_view>{};
  auto strip_it = [&](std::string_view ch) {
    return chars ? std::find(set.begin(), set.end(), ch) != set.end() : py_isspace(ch);
  };
  std::size_t b = 0, e = cs.size();
  while (left && b < e && strip_it(cs[b])) ++b;
  while (right && e > b && strip_it(cs[e - 1])) --e;
  if (b == e) return {};
  return std::string(cs[b].data(), static_cast<std::size_t>(cs[e - 1].data() + cs[e - 1].size() - cs[b].data()));
}

std::vector<std::string> py_split(std::string_view s, const std::string* sep, std::int64_t maxsplit, bool from_right) {
  std::vector<std::string> out;
  if (sep) {
    std::int64_t n = 0;
    if (!from_right) {
      std::size_t pos = 0;
      for (std::size_t at; (maxsplit < 0 || n < maxsplit) && (at = s.find(*sep, pos)) != s.npos; ++n) {
        out.emplace_back(s.substr(pos, at - pos));
        pos = at + sep->size();
      }
      out.emplace_back(s.substr(pos));
    } else {
      std::size_t end = s.size();
      for (; maxsplit < 0 || n < maxsplit; ++n) {
        if (end < sep->size()) break;
        const std::size_t at = s.rfind(*sep, end - sep->size());
        if (at == s.npos) break;
        out.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
        end = at;
      }
      out.emplace_back(s.substr(0, end));
      std::reverse(out.begin(), out.end());
    }
    return out;
  }
  // Whitespace runs; the unsplit remainder keeps its inner and far-side whitespace.
  const auto cs = utf8_chars(s);
  std::vector<std::string_view> rev;
  if (from_right) rev.assign(cs.rbegin(), cs.rend());
  const auto& seq = from_right ? rev : cs;
  std::size_t i = 0;
  std::int64_t n = 0;
  while (true) {
    while (i < seq.size() && py_isspace(seq[i])) ++i;
    if (i == seq.size()) break;
    std::size_t j = i;
    if (maxsplit >= 0 && n == maxsplit)
      j = seq.size();
    else
      while (j < seq.size() && !py_isspace(seq[j])) ++j;
    std::string word;
    for (std::size_t k = i; k < j; ++k) word += seq[from_right ? j - 1 - (k - i) : k];
    out.push_back(std::move(word));
    ++n;
    i = j;
  }
  if (from_right) std::reverse(out.begin(), out.end());
  return out;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view with, std::int64_t count) {
  std::string out;
  std::int64_t n = 0;
  if (old.empty()) {
    const auto cs = utf8_chars(s);
    for (std::size_t k = 0; k <= cs.size(); ++k) {
      if (count < 0 || n < count) out += with, ++n;
      if (k < cs.size()) out += cs[k];
    }
    return out;
  }
  std::size_t pos = 0;
  for (std::size_t at; (count < 0 || n < count) && (at = s.find(old, pos)) != s.npos; ++n) {
    out += s.substr(pos, at - pos);
    out += with;
    pos = at + old.size();
  }
  out += s.substr(pos);
  return out;
}

std::string py_upper(std::string_view s) {
  std::string out = map_chars(s, cp_upper);
  for (std::size_t at; (at = out.find("\xC3\x9F")) != std::string::npos;) out.replace(at, 2, "SS");  // ß
  return out;
}
std::string py_lower(std::string_view s) { return map_chars(s, cp_lower); }

std::string py_title(std::string_view s) {
  bool prev_cased = false;
  return map_chars(s, [&](std::uint32_t c) {
    const bool cased = cp_cased(c);
    const std::uint32_t r = cased ? (prev_cased ? cp_lower(c) : cp_upper(c)) : c;
    prev_cased = cased;
    return r;
  });
}

std::string py_capitalize(std::string_view s) {
  bool first = true;
  return map_chars(s, [&](std::uint32_t c) {
    const std::uint32_t r = first ? cp_upper(c) : cp_lower(c);
    first = false;
    return r;
  });
}

std::string py_quote(std::string_view s) {
  const bool dq = s.find('\'') != s.npos && s.find('"') == s.npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (std::string_view ch : utf8_chars(s)) {
    const std::uint32_t c = char_code_point(ch);
    char buf[16];
    if (c == '\\' || c == static_cast<std::uint32_t>(q))
      out += '\\', out += static_cast<char>(c);
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (ch.size() == 1 && c >= 0x80)
      std::snprintf(buf, sizeof buf, "\\x%02x", c), out += buf;  // stray byte
    else if (cp_printable(c))
      out += ch;
    else
      std::snprintf(buf, sizeof buf, c < 0x100 ? "\\x%02x" : "\\u%04x", c), out += buf;
  }
  return out + q;
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace pagedserve::jinja
