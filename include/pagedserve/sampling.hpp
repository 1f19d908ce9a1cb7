#pragma once
// Per-request sampling: greedy, temperature, top-k, top-p, min-p, seeded for reproducibility.
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "pagedserve/ids.hpp"

namespace pagedserve {

// The OpenAI-named knobs of a request. Validated by the API layer before they get here.
struct sampling_params {
  float temperature = 1.0f;         // 0 = greedy (argmax, lowest id on ties)
  float top_p = 1.0f;               // keep the smallest set of tokens whose probability sums to >= top_p
  int top_k = 0;                    // keep the k most likely tokens; 0 = all
  float min_p = 0.0f;               // drop tokens with probability < min_p * max probability
  std::optional<std::uint64_t> seed;  // same seed, same output; none = drawn at random
  int max_tokens = 0;               // tokens to generate at most (counts a stop token)
  std::vector<std::string> stop;    // stop strings (matched on the detokenized text)
  bool ignore_eos = false;          // keep going past EOS (load tests want exact lengths)
};

class sampler {
 public:
  sampler(const sampling_params& params, std::uint64_t seed);
  // Picks the next token from logits[n_vocab]. May modify logits (scaling, filtering).
  token_id sample(float* logits, int n_vocab);

 private:
  float temperature_, top_p_, min_p_;
  int top_k_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, token_id>> candidates_;  // reused scratch
};

token_id argmax(const float* logits, int n);

}  // namespace pagedserve
