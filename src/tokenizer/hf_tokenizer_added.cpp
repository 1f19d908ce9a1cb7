// Added tokens (<|im_start|>, <|eot_id|>, <s>, ...) are found in the text before anything else
// runs, so a special token written in a prompt becomes its one id instead of being spelled out by
// BPE (Hugging Face's default, split_special_tokens=false). The search is leftmost-longest and
// non-overlapping, as the Aho-Corasick automaton in Hugging Face tokenizers. The tokens live in a
// byte trie: at each position one walk finds the longest token there in at most as many steps as the
// longest token has bytes, where a per-first-byte candidate list made Llama 3's text full of '<'
// compare ~256 tokens per byte.
#include <algorithm>

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
  return utf8_decode(s, b).cp;
}

}  // namespace

void added_vocab::add(added_token t) {
  if (t.content.empty()) return;  // can never match
  (t.normalized ? n_normalized_ : n_raw_) += 1;
  tokens_.push_back(std::move(t));
}

void added_vocab::finish() {
  nodes_.assign(1, trie_node{});
  for (std::uint32_t i = 0; i < tokens_.size(); ++i) {
    std::uint32_t at = 0;
    for (const char ch : tokens_[i].content) {
      const auto byte = static_cast<unsigned char>(ch);
      auto& next = nodes_[at].next;
      auto it = std::lower_bound(next.begin(), next.end(), byte, [](const auto& e, unsigned char b) { return e.first < b; });
      if (it == next.end() || it->first != byte) {
        it = next.insert(it, {byte, static_cast<std::uint32_t>(nodes_.size())});
        at = it->second;
        nodes_.emplace_back();  // invalidates `next`, used no more
      } else {
        at = it->second;
      }
    }
    std::int32_t& slot = nodes_[at].token[tokens_[i].normalized ? 1 : 0];
    if (slot < 0) slot = static_cast<std::int32_t>(i);  // the first of identical tokens wins
  }
}

const added_token* added_vocab::longest_at(std::string_view text, std::size_t pos, bool normalized) const {
  const added_token* hit = nullptr;
  std::uint32_t at = 0;
  for (std::size_t k = pos; k < text.size() && !nodes_.empty(); ++k) {
    const auto& next = nodes_[at].next;
    const auto byte = static_cast<unsigned char>(text[k]);
    auto it = std::lower_bound(next.begin(), next.end(), byte, [](const auto& e, unsigned char b) { return e.first < b; });
    if (it == next.end() || it->first != byte) break;
    at = it->second;
    if (const std::int32_t t = nodes_[at].token[normalized ? 1 : 0]; t >= 0) hit = &tokens_[t];
  }
  return hit;
}

std::vector<text_range> added_vocab::find_special(std::string_view text) const {
  std::vector<text_range> out;
  for (std::size_t pos = 0; pos < text.size();) {
    const added_token* hit = longest_at(text, pos, false);
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    if (hit->special) out.push_back({pos, pos + hit->content.size()});
    pos += hit->content.size();
  }
  return out;
}

void added_vocab::split(std::string_view text, bool normalized, std::vector<segment>& out,
                        std::span<const text_range> literal) const {
  std::size_t plain_start = 0;  // start of text not yet emitted
  std::size_t pos = 0;
  auto next_literal = literal.begin();  // the first range not wholly before pos
  while (pos < text.size()) {
    const added_token* hit = longest_at(text, pos, normalized);
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    std::size_t begin = pos, end = pos + hit->content.size();
    while (next_literal != literal.end() && next_literal->end <= begin) ++next_literal;
    if (hit->special && next_literal != literal.end() && next_literal->begin < end) {
      pos = end;  // a special token written inside literal text stays text (split_special_tokens there)
      continue;
    }
    if (hit->single_word) {
      const bool left_ok = begin == 0 || !is_word_char(char_before(text, begin));
      const bool right_ok = end == text.size() || !is_word_char(utf8_decode(text, end).cp);
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
        if (!is_unicode_space(utf8_decode(text, b).cp)) break;
        begin = b;
      }
    }
    if (hit->rstrip) {
      while (end < text.size()) {
        const utf8_char ch = utf8_decode(text, end);
        if (!is_unicode_space(ch.cp)) break;
        end += ch.length;
      }
    }
    if (begin > plain_start) out.push_back({text.substr(plain_start, begin - plain_start), -1});
    out.push_back({text.substr(begin, end - begin), hit->id});
    plain_start = pos = end;
  }
  if (plain_start < text.size()) out.push_back({text.substr(plain_start), -1});
}

}  // namespace pagedserve::hf
