#include "grammar/token_vocabulary.hpp"

#include <algorithm>

#include "tokenizer/tokenizer.hpp"

namespace pagedserve::grammar {

token_vocabulary::token_vocabulary(std::vector<std::string> token_bytes, std::vector<token_id> end_ids)
    : bytes_(std::move(token_bytes)), end_ids_(std::move(end_ids)) {
  for (token_id id = 0; id < size(); ++id)
    if (!bytes_[id].empty()) sorted_.push_back(id);
  std::sort(sorted_.begin(), sorted_.end(), [&](token_id a, token_id b) { return bytes_[a] < bytes_[b]; });
  shared_prefix_.resize(sorted_.size(), 0);
  for (std::size_t i = 1; i < sorted_.size(); ++i) {
    const std::string& a = bytes_[sorted_[i - 1]];
    const std::string& b = bytes_[sorted_[i]];
    std::uint32_t k = 0;
    while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    shared_prefix_[i] = k;
  }
}

token_vocabulary token_vocabulary_from(const tokenizer& tok, std::vector<token_id> end_ids) {
  const int n = tok.vocab_size();
  // Decode each piece after an ordinary token, not at the start, where SentencePiece drops the
  // leading space: generated tokens always follow the prompt.
  token_id ordinary = 0;
  while (ordinary < n && (tok.is_special(ordinary) || ordinary == tok.bos_id())) ++ordinary;
  std::vector<std::string> bytes(n);
  for (token_id id = 0; id < n; ++id)
    if (!tok.is_special(id) && id != tok.bos_id() && id != tok.eos_id()) bytes[id] = tok.decode_piece(ordinary, id);
  for (token_id id : end_ids)
    if (id >= 0 && id < n) bytes[id].clear();
  return token_vocabulary(std::move(bytes), std::move(end_ids));
}

}  // namespace pagedserve::grammar
