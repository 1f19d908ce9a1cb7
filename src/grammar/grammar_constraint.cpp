#include "grammar/grammar_constraint.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace pagedserve::grammar {

namespace {
constexpr std::size_t max_cached_masks = 64;

void set_bit(std::vector<std::uint64_t>& bits, token_id id) { bits[id >> 6] |= std::uint64_t{1} << (id & 63); }
}  // namespace

grammar_constraint::grammar_constraint(std::shared_ptr<const grammar> g, std::shared_ptr<const token_vocabulary> v)
    : matcher_(std::move(g)), vocab_(std::move(v)) {}

const std::vector<std::uint64_t>& grammar_constraint::allowed() {
  if (current_mask_) return *current_mask_;
  const grammar_matcher::set_id state = matcher_.current_set();
  auto it = masks_.find(state);
  if (it == masks_.end()) {
    if (masks_.size() >= max_cached_masks) masks_.clear();
    std::vector<std::uint64_t> bits((vocab_->size() + 63) / 64, 0);
    compute(bits);
    it = masks_.emplace(state, std::move(bits)).first;
  }
  current_mask_ = &it->second;
  return *current_mask_;
}

void grammar_constraint::compute(std::vector<std::uint64_t>& bits) {
  // The vocabulary in byte order is a trie read depth first: levels_[d] is the state after the first
  // d bytes of the current token, still valid for the next token up to their common prefix; a byte
  // the grammar refuses rules out every following token that shares it.
  const auto& sorted = vocab_->sorted();
  if (levels_.empty()) levels_.resize(1);
  levels_[0] = matcher_.current_set();
  std::size_t valid = 0;  // levels_[0..valid] hold the current token's prefix states
  for (std::size_t i = 0; i < sorted.size();) {
    const std::string& bytes = vocab_->bytes(sorted[i]);
    std::size_t d = std::min<std::size_t>(vocab_->shared_prefix(i), valid);
    bool ok = true;
    for (; d < bytes.size(); ++d) {
      if (levels_.size() <= d + 1) levels_.resize(d + 2);
      levels_[d + 1] = matcher_.step(levels_[d], static_cast<unsigned char>(bytes[d]));
      if (levels_[d + 1] == 0) {
        ok = false;
        break;
      }
    }
    valid = d;
    if (ok) {
      set_bit(bits, sorted[i]);
      ++i;
    } else {
      for (++i; i < sorted.size() && vocab_->shared_prefix(i) > d; ++i) {
      }
    }
  }
  const bool any = std::any_of(bits.begin(), bits.end(), [](std::uint64_t w) { return w != 0; });
  if (matcher_.can_end() || !any)  // a dead end (a cap dropped every stack) ends the sequence too
    for (token_id id : vocab_->end_ids())
      if (id >= 0 && id < vocab_->size()) set_bit(bits, id);
}

void grammar_constraint::mask(float* logits, int n_vocab) {
  const auto& bits = allowed();
  const int n = std::min(n_vocab, vocab_->size());
  for (int word = 0; word * 64 < n; ++word) {
    if (bits[word] == ~std::uint64_t{0}) continue;  // inside a string most words allow all 64
    const int end = std::min(n, word * 64 + 64);
    for (int i = word * 64; i < end; ++i)
      if (!((bits[word] >> (i & 63)) & 1)) logits[i] = -std::numeric_limits<float>::infinity();
  }
  for (int i = n; i < n_vocab; ++i) logits[i] = -std::numeric_limits<float>::infinity();
}

void grammar_constraint::accept(token_id id) {
  if (id < 0 || id >= vocab_->size() || vocab_->bytes(id).empty()) return;  // an end token: nothing follows
  if (!matcher_.accept(vocab_->bytes(id))) return;                          // not allowed: the state stays
  current_mask_ = nullptr;
  if (matcher_.compact_if_large()) masks_.clear();
}

}  // namespace pagedserve::grammar
