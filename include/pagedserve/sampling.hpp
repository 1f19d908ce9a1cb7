#pragma once
// Per-request sampling: penalties and logit bias, then greedy or temperature with top-k, top-p and
// min-p, seeded for reproducibility; optionally the log-probabilities of the choice and its rivals.
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "pagedserve/ids.hpp"

namespace pagedserve {

// A constraint on the shape of the generated text (OpenAI response_format, vLLM structured outputs,
// llama.cpp grammar). The sampler masks every step's logits to the tokens that keep the output a
// prefix of: prefix + <a value matching spec> + suffix; the end-of-sequence token is allowed only
// once the whole is complete. prefix/suffix are literal text (a forced tool call's wrapper such as
// "<tool_call>\n" ... "\n</tool_call>"); empty for response_format.
struct output_format {
  enum class kind { none, json_object, json_schema, regex, grammar };
  kind type = kind::none;
  std::string spec;    // json_schema: the schema's JSON text; regex: the pattern; grammar: GBNF text
  std::string prefix;  // literal text before the value
  std::string suffix;  // literal text after the value
};

// The OpenAI-named knobs of a request. Validated by the API layer before they get here.
struct sampling_params {
  float temperature = 1.0f;           // 0 = greedy (argmax, lowest id on ties)
  float top_p = 1.0f;                 // keep the smallest set of tokens whose probability sums to >= top_p
  int top_k = 0;                      // keep the k most likely tokens; 0 = all
  float min_p = 0.0f;                 // drop tokens with probability < min_p * max probability
  float presence_penalty = 0.0f;      // subtracted once from every token already generated (OpenAI)
  float frequency_penalty = 0.0f;     // subtracted per occurrence in the generated tokens (OpenAI)
  float repetition_penalty = 1.0f;    // divides positive / multiplies negative logits of prompt+output tokens (CTRL)
  std::vector<std::pair<token_id, float>> logit_bias;  // added to the named tokens' logits
  std::optional<std::uint64_t> seed;  // same seed, same output; none = drawn at random
  int max_tokens = 0;                 // tokens to generate at most (counts a stop token)
  std::vector<std::string> stop;      // stop strings (matched on the detokenized text)
  bool ignore_eos = false;            // keep going past EOS (load tests want exact lengths)
  int logprobs = -1;                  // -1: none; k >= 0: the chosen token's logprob and the top k
  std::string cache_salt;             // prefix-cache isolation: only requests with the same salt share blocks
  output_format format;               // structured output; kind::none = free text
};

// The log-probability of a sampled token and of the most likely alternatives, from the model's raw
// distribution (log-softmax of the logits before penalties and temperature, as vLLM reports them).
struct token_logprobs {
  float logprob = 0.0f;
  std::vector<std::pair<token_id, float>> top;  // most likely first
};

// Restricts which tokens may come next (constrained decoding, src/grammar): the sampler masks the
// logits with it before drawing, and tells it the token drawn.
class token_constraint {
 public:
  virtual ~token_constraint() = default;
  virtual void mask(float* logits, int n_vocab) = 0;  // forbidden tokens' logits become -inf
  virtual void accept(token_id id) = 0;
};

class sampler {
 public:
  // prompt: the sequence's prompt ids (repetition penalty covers them).
  sampler(const sampling_params& params, std::uint64_t seed, const std::vector<token_id>& prompt = {});
  // Picks the next token from logits[n_vocab] and remembers it for the penalties. May modify logits.
  token_id sample(float* logits, int n_vocab, token_logprobs* logprobs_out = nullptr);
  bool wants_logprobs() const { return n_logprobs_ >= 0; }
  // From now on, draws only tokens the constraint allows (logprobs stay the raw distribution's).
  void constrain(std::unique_ptr<token_constraint> c) { constraint_ = std::move(c); }
  // Speculative decoding: picks the token at a position where a deterministic proposer (n-gram
  // lookup) proposed `proposed`; the result equals `proposed` when the proposal is accepted. Greedy:
  // sample() itself; else speculative sampling against the distribution sample() would draw from,
  // so the output's distribution is exactly sample()'s. Remembers the result for the penalties.
  // A draft model's proposal passes the distribution q [n_vocab] it was drawn from (empty: a point mass).
  token_id sample_proposed(float* logits, int n_vocab, token_id proposed, token_logprobs* logprobs_out = nullptr,
                           std::span<const float> q = {});
  float temperature() const { return temperature_; }  // <= 0: greedy

 private:
  void apply_penalties_and_bias(float* logits, int n_vocab) const;
  token_id sample_at_temperature(const float* logits, int n_vocab);
  void record(token_id chosen);  // for the penalties

  float temperature_, top_p_, min_p_;
  int top_k_;
  float presence_, frequency_, repetition_;
  std::vector<std::pair<token_id, float>> bias_;
  int n_logprobs_;
  std::mt19937_64 rng_;
  std::unordered_map<token_id, int> generated_counts_;  // output token -> occurrences
  std::unordered_map<token_id, bool> seen_;             // prompt or output token (repetition penalty)
  std::unique_ptr<token_constraint> constraint_;        // null: any token
  std::vector<float> target_;                           // [n_vocab] sample_proposed's distribution, scratch
};

token_id argmax(const float* logits, int n);

}  // namespace pagedserve
