// A tokenizer.json tokenizer: runs the stages in Hugging Face's order (added tokens in the raw
// text, normalizer, added tokens in normalized text, pre-tokenizer, BPE, post-processor) and
// decodes through the per-id table the decoder was reduced to at load time.
#include <algorithm>

#include "tokenizer/hf_tokenizer_internal.hpp"

namespace pagedserve::hf {

hf_tokenizer::hf_tokenizer(normalizer n, pre_tokenizer p, bpe_model m, added_vocab a, decoder_table d,
                           post_processor post, std::vector<std::string> tokens, tokenizer_settings s)
    : normalizer_(std::move(n)),
      pre_tokenizer_(std::move(p)),
      model_(std::move(m)),
      added_(std::move(a)),
      decoder_(std::move(d)),
      post_(std::move(post)),
      tokens_(std::move(tokens)),
      special_(tokens_.size(), false),
      settings_(s) {
  for (const added_token& t : added_.tokens())
    if (t.special && t.id >= 0 && static_cast<std::size_t>(t.id) < special_.size()) special_[t.id] = true;
  for (const token_id id : {settings_.bos, settings_.eos})
    if (id >= 0 && static_cast<std::size_t>(id) < special_.size()) special_[id] = true;
}

void hf_tokenizer::encode_segment(std::string_view text, bool first, std::vector<token_id>& out) const {
  const std::string normalized = normalizer_.apply(text);
  std::vector<segment> parts;
  if (added_.any(true))
    added_.split(normalized, true, parts);
  else
    parts.push_back({normalized, -1});
  std::vector<std::string> words;
  for (const segment& part : parts) {
    if (part.id >= 0) {
      out.push_back(part.id);
      continue;
    }
    words.clear();
    pre_tokenizer_.split(part.text, first && part.text.data() == normalized.data(), words);
    for (const std::string& w : words) model_.encode_word(w, out);
  }
}

std::vector<token_id> hf_tokenizer::encode_plain(std::string_view text, std::span<const text_range> literal) const {
  // Hugging Face only ever sees valid UTF-8 (a Rust String); invalid bytes become U+FFFD here.
  std::string sanitized;
  std::vector<text_range> whole;
  if (!utf8_valid(text)) {
    sanitized = utf8_sanitize(text);
    text = sanitized;
    // The ranges' offsets moved: keep every special token in the text literal rather than trust them.
    if (!literal.empty()) literal = whole = {text_range{0, text.size()}};
  }
  std::vector<segment> segments;
  if (added_.any(false))
    added_.split(text, false, segments, literal);
  else
    segments.push_back({text, -1});
  std::vector<token_id> out;
  out.reserve(text.size() / 3 + 4);
  for (const segment& s : segments) {
    if (s.id >= 0)
      out.push_back(s.id);
    else
      encode_segment(s.text, s.text.data() == text.data(), out);
  }
  return out;
}

std::vector<token_id> hf_tokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<token_id> ids = encode_plain(text);
  if (add_bos && settings_.add_bos && settings_.bos >= 0) ids.insert(ids.begin(), settings_.bos);
  return ids;
}

std::vector<token_id> hf_tokenizer::encode_with_literal_ranges(std::string_view text, bool add_bos,
                                                               std::span<const text_range> literal) const {
  std::vector<token_id> ids = encode_plain(text, literal);
  if (add_bos && settings_.add_bos && settings_.bos >= 0) ids.insert(ids.begin(), settings_.bos);
  return ids;
}

std::vector<text_range> hf_tokenizer::find_special_tokens(std::string_view text) const {
  return added_.find_special(text);
}

std::vector<token_id> hf_tokenizer::encode_with_special_tokens(std::string_view text) const {
  std::vector<token_id> ids = post_.prefix;
  const std::vector<token_id> body = encode_plain(text);
  ids.insert(ids.end(), body.begin(), body.end());
  ids.insert(ids.end(), post_.suffix.begin(), post_.suffix.end());
  return ids;
}

std::string hf_tokenizer::decode_piece(token_id prev, token_id id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= decoder_.pieces.size()) return {};
  const std::string& piece = decoder_.pieces[id];
  if (prev < 0) {  // the first token of a sequence
    if (decoder_.strip_first_space && piece.starts_with(' ')) return piece.substr(1);
    return piece;
  }
  return decoder_.join_with_space ? " " + piece : piece;
}

std::string hf_tokenizer::decode(std::span<const token_id> ids, bool skip_special_tokens) const {
  std::string text = tokenizer::decode(ids, skip_special_tokens);
  return settings_.cleanup ? cleanup_tokenization_spaces(std::move(text)) : text;
}

bool hf_tokenizer::is_special(token_id id) const {
  return id >= 0 && static_cast<std::size_t>(id) < special_.size() && special_[id];
}

std::optional<token_id> hf_tokenizer::token_to_id(std::string_view text) const {
  for (const added_token& t : added_.tokens())
    if (t.content == text) return t.id;
  return model_.find(text);
}

std::string hf_tokenizer::token_text(token_id id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size()) return {};
  return tokens_[id];
}

}  // namespace pagedserve::hf
