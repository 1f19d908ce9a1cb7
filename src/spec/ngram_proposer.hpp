#pragma once
// Prompt lookup (n-gram) proposals for speculative decoding, as vLLM's "ngram" method and
// llama.cpp's lookup decoding: find the most recent earlier occurrence of the sequence's last n
// tokens (n from lookup_max down to lookup_min) in its prompt and output, and propose the tokens that
// followed it. No model runs: outputs that quote, edit or summarise their prompt repeat it, and each
// accepted proposal saves a whole weight-streaming decode step.
#include <span>
#include <vector>

#include "pagedserve/ids.hpp"

namespace pagedserve {

struct ngram_params {
  int lookup_max = 4;  // longest suffix matched, tokens
  int lookup_min = 1;  // shortest suffix matched, tokens
};

// Up to n_max tokens that followed the latest earlier match of the longest matching suffix of
// `tokens` (empty when no suffix of lookup_min..lookup_max tokens occurred before).
std::vector<token_id> ngram_propose(std::span<const token_id> tokens, const ngram_params& params, int n_max);

}  // namespace pagedserve
