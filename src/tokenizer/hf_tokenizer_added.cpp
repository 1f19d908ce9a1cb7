// Added tokens (<|im_start|>, <|eot_id|>, <s>, ...) are found in the text before anything else
// runs, so a special token written in a prompt becomes its one id instead of being spelled out by
// BPE (Hugging Face's default, split_special_tokens=false). The search is leftmost-longest and
// non-overlapping, as the Aho-Corasick automaton in Hugging Face tokenizers; with few tokens that
// mostly share a first byte, a per-first-byte candidate list is just as fast.
#include <algorithm>
#include <cstring>

#include "tokenizer/hf_tokenizer_internal.hpp"

namespace pagedserve::hf {
namespace {

// Letters, digits and '_' (what single_word refuses to touch); ASCII exactly, anything else
// non-space and non-ASCII counts as a word character, which errs towards not matching.
bool is_word_char(char32_t c) {
  if (c < 0x80) return std::isalnum(static_cast<int>(c)) || c == '_';
  return !is_unicode_space(c);
}

// The code point that ends just before `pos` (pos > 0), walking back over continuation bytes.
char32_t char_before(std::string_view s, std::size_t pos) {
  std::size_t b = pos - 1;
  while (b > 0 && pos - b < 4 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  return utf8_next(s, b).first;
}

}  // namespace

void added_vocab::add(added_token t) {
  if (t.content.empty()) return;  // can never match
  (t.normalized ? n_normalized_ : n_raw_) += 1;
  tokens_.push_back(std::move(t));
}

void added_vocab::finish() {
  for (auto& list : by_first_byte_) list.clear();
  for (std::uint32_t i = 0; i < tokens_.size(); ++i)
    by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  for (auto& list : by_first_byte_)
    std::stable_sort(list.begin(), list.end(), [&](std::uint32_t a, std::uint32_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
}

void added_vocab::split(std::string_view text, bool normalized, std::vector<segment>& out) const {
  std::size_t plain_start = 0;  // start of text not yet emitted
  std::size_t pos = 0;
  while (pos < text.size()) {
    const added_token* hit = nullptr;
    for (const std::uint32_t i : by_first_byte_[static_cast<unsigned char>(text[pos])]) {
      const added_token& t = tokens_[i];
      if (t.normalized == normalized && text.size() - pos >= t.content.size() &&
          std::memcmp(text.data() + pos, t.content.data(), t.content.size()) == 0) {
        hit = &t;
        break;
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    std::size_t begin = pos, end = pos + hit->content.size();
    if (hit->single_word) {
      const bool left_ok = begin == 0 || !is_word_char(char_before(text, begin));
      const bool right_ok = end == text.size() || !is_word_char(utf8_next(text, end).first);
      if (!left_ok || !right_ok) {  // rejected: the matched text stays ordinary text
        pos = end;
        continue;
      }
    }
    if (hit->lstrip) {
      while (begin > plain_start) {
        const std::size_t at = begin - 1;
        std::size_t b = at;
        while (b > plain_start && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
        if (!is_unicode_space(utf8_next(text, b).first)) break;
        begin = b;
      }
    }
    if (hit->rstrip) {
      while (end < text.size()) {
        const auto [c, n] = utf8_next(text, end);
        if (!is_unicode_space(c)) break;
        end += n;
      }
    }
    if (begin > plain_start) out.push_back({text.substr(plain_start, begin - plain_start), -1});
    out.push_back({text.substr(begin, end - begin), hit->id});
    plain_start = pos = end;
  }
  if (plain_start < text.size()) out.push_back({text.substr(plain_start), -1});
}

}  // namespace pagedserve::hf
