// Streaming detokenization: byte-fallback tokens split UTF-8 characters across tokens, and a client
// must never see half a character. Bytes are held until their character completes; anything that
// can never become a valid character comes out as U+FFFD, one per maximal invalid subpart (the
// Unicode-recommended practice, as WHATWG decoders and Python's errors="replace" do).
#include <cstddef>

#include "tokenizer/tokenizer.hpp"
#include "pagedserve/utf8.hpp"

namespace pagedserve {
namespace {

constexpr std::string_view replacement_char = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

std::string incremental_detokenizer::push(token_id id) {
  pending_ += tok_.decode_piece(prev_, id);
  prev_ = id;
  std::string out;
  const std::string_view s = pending_;
  std::size_t pos = 0;
  while (pos < s.size()) {
    const utf8_char ch = utf8_decode(s, pos);
    if (ch.status == utf8_status::incomplete) break;
    if (ch.status == utf8_status::complete) {
      out.append(s.substr(pos, ch.length));
    } else {
      out.append(replacement_char);
    }
    pos += ch.length;
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
