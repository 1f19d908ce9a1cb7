#pragma once
// The bytes every token stands for, precomputed once per tokenizer and shared by all requests, in
// byte order with each token's common prefix with the one before: a mask walk reads the vocabulary
// as a trie, advancing the grammar once per shared prefix instead of once per token.
#include <cstdint>
#include <string>
#include <vector>

#include "pagedserve/ids.hpp"

namespace pagedserve {
class tokenizer;
}

namespace pagedserve::grammar {

class token_vocabulary {
 public:
  // token_bytes[id]: what token id adds to the text, empty for tokens no grammar may produce
  // (control tokens); end_ids: the tokens that end a sequence, allowed once the grammar is complete.
  token_vocabulary(std::vector<std::string> token_bytes, std::vector<token_id> end_ids);

  int size() const { return static_cast<int>(bytes_.size()); }
  const std::string& bytes(token_id id) const { return bytes_[id]; }
  const std::vector<token_id>& end_ids() const { return end_ids_; }
  // Tokens with bytes, sorted by them; shared_prefix(i): bytes in common with sorted(i - 1).
  const std::vector<token_id>& sorted() const { return sorted_; }
  std::uint32_t shared_prefix(std::size_t i) const { return shared_prefix_[i]; }

 private:
  std::vector<std::string> bytes_;
  std::vector<token_id> end_ids_;
  std::vector<token_id> sorted_;
  std::vector<std::uint32_t> shared_prefix_;
};

// From a tokenizer: each token's bytes as it decodes in the middle of a text (control tokens have
// none; added tokens that are not control tokens, such as "<tool_call>", count by their text).
token_vocabulary token_vocabulary_from(const tokenizer& tok, std::vector<token_id> end_ids);

}  // namespace pagedserve::grammar
