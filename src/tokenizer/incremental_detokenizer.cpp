// Streaming detokenization: byte-fallback tokens split UTF-8 characters across tokens, and a client
// must never see half a character. Bytes are held until their character completes; anything that
// can never become a valid character comes out as U+FFFD, one per maximal invalid subpart (the
// Unicode-recommended practice, as WHATWG decoders and Python's errors="replace" do).
#include <cstddef>

#include "pagedserve/tokenizer.hpp"

namespace pagedserve {
namespace {

constexpr std::string_view replacement_char = "\xEF\xBF\xBD";  // U+FFFD

enum class utf8_scan { complete, incomplete, invalid };

// Classifies the character starting at s[0] (s non-empty). `n` is set to its length when complete,
// to the bytes seen when incomplete, and to the length of the invalid maximal subpart otherwise.
utf8_scan utf8_scan_char(std::string_view s, std::size_t& n) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  n = 1;
  if (b0 < 0x80) return utf8_scan::complete;
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte (excludes overlongs, surrogates, > U+10FFFF)
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return utf8_scan::invalid;  // a stray continuation byte, C0/C1 (always overlong) or F5..FF
  }
  for (std::size_t i = 1; i < need; ++i) {
    if (i >= s.size()) {
      n = i;
      return utf8_scan::incomplete;
    }
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) {
      n = i;
      return utf8_scan::invalid;
    }
  }
  n = need;
  return utf8_scan::complete;
}

}  // namespace

std::string incremental_detokenizer::push(token_id id) {
  pending_ += tok_.decode_piece(prev_, id);
  prev_ = id;
  std::string out;
  const std::string_view s = pending_;
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t n = 0;
    const utf8_scan kind = utf8_scan_char(s.substr(pos), n);
    if (kind == utf8_scan::incomplete) break;
    if (kind == utf8_scan::complete) {
      out.append(s.substr(pos, n));
    } else {
      out.append(replacement_char);
    }
    pos += n;
  }
  pending_.erase(0, pos);
  return out;
}

std::string incremental_detokenizer::flush() {
  // Everything before an incomplete character was already emitted, so what is held is one
  // unfinished character.
  std::string out = pending_.empty() ? std::string{} : std::string{replacement_char};
  pending_.clear();
  return out;
}

}  // namespace pagedserve
