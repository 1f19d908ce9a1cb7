#pragma once
// Constrained decoding for one sequence: which tokens keep the output inside the grammar (a walk of
// the vocabulary in byte order against the matcher, memoised per matcher state), applied to the
// logits as -inf; end-of-sequence tokens only once the grammar is complete, and only they once
// nothing more may follow.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_matcher.hpp"
#include "grammar/token_vocabulary.hpp"
#include "pagedserve/sampling.hpp"

namespace pagedserve::grammar {

class grammar_constraint final : public token_constraint {
 public:
  grammar_constraint(std::shared_ptr<const grammar> g, std::shared_ptr<const token_vocabulary> vocabulary);

  // One bit per token id: may it come next?
  const std::vector<std::uint64_t>& allowed();
  bool is_allowed(token_id id) { return id >= 0 && id < vocab_->size() && ((allowed()[id >> 6] >> (id & 63)) & 1); }
  void mask(float* logits, int n_vocab) override;
  void accept(token_id id) override;
  const grammar_matcher& matcher() const { return matcher_; }

 private:
  void compute(std::vector<std::uint64_t>& bits);

  grammar_matcher matcher_;
  std::shared_ptr<const token_vocabulary> vocab_;
  std::unordered_map<grammar_matcher::set_id, std::vector<std::uint64_t>> masks_;  // state -> allowed
  const std::vector<std::uint64_t>* current_mask_ = nullptr;                       // the current state's
  std::vector<grammar_matcher::set_id> levels_;                                     // walk scratch, per depth
};

}  // namespace pagedserve::grammar
