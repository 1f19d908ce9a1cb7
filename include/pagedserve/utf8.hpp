#pragma once
// The one UTF-8 module: strict decoding of one character (ICU's U8_NEXT: no overlongs, surrogates or
// code points past U+10FFFF; an invalid sequence ends after its maximal subpart, the Unicode-recommended
// practice WHATWG decoders and Python's errors="replace" follow), validation and repair of text, the
// encoding of one code point, and the clipping of client text quoted back in errors. Used by the
// tokenizers, the streaming detokenizer, the chat-template engine and the API's responses.
#include <unicode/utf8.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace pagedserve {

enum class utf8_status {
  complete,    // a whole valid character
  incomplete,  // a valid start cut short by the end of the text (more bytes may complete it)
  invalid,     // can never become a valid character
};

struct utf8_char {
  char32_t cp;         // the code point; U+FFFD unless complete
  std::size_t length;  // bytes: the character's, those seen so far, or the maximal invalid subpart
  utf8_status status;
};

// The character starting at s[pos] (pos < s.size()).
inline utf8_char utf8_decode(std::string_view s, std::size_t pos) {
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(s.data());
  const auto length = static_cast<std::int64_t>(s.size());
  std::int64_t i = static_cast<std::int64_t>(pos);
  std::int32_t c = 0;
  U8_NEXT(bytes, i, length, c);
  const std::size_t n = static_cast<std::size_t>(i) - pos;
  if (c >= 0) return {static_cast<char32_t>(c), n, utf8_status::complete};
  // U8_NEXT stopped after the maximal subpart: when that reached the end from a valid lead byte
  // (C2..F4), every byte seen fits, and more text could complete it.
  const auto lead = bytes[pos];
  const bool cut_short = i == length && lead >= 0xC2 && lead <= 0xF4;
  return {U'\uFFFD', n, cut_short ? utf8_status::incomplete : utf8_status::invalid};
}

inline bool utf8_valid(std::string_view s) {
  for (std::size_t pos = 0; pos < s.size();) {
    const utf8_char ch = utf8_decode(s, pos);
    if (ch.status != utf8_status::complete) return false;
    pos += ch.length;
  }
  return true;
}

// s with each maximal invalid subpart (and a character cut short at the end) replaced by one U+FFFD.
inline std::string utf8_sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t pos = 0; pos < s.size();) {
    const utf8_char ch = utf8_decode(s, pos);
    if (ch.status == utf8_status::complete)
      out.append(s.substr(pos, ch.length));
    else
      out += "\xEF\xBF\xBD";
    pos += ch.length;
  }
  return out;
}

// Appends code point cp (at most U+10FFFF) to out as UTF-8.
inline void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The longest prefix of s of at most max_bytes that does not end inside a code point (s is valid UTF-8).
inline std::string_view utf8_prefix(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  std::size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;  // s[end] continues a code point
  return s.substr(0, end);
}

}  // namespace pagedserve
