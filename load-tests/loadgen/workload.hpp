#pragma once
// The requests of a run: prompts cut from a corpus to exact token lengths (when a tokenizer is
// given), unique per request, optionally behind a shared system prompt; lengths and arrival times
// drawn from the seed, so the same flags give the same requests.
#include <expected>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/options.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagedserve::loadgen {

struct request_spec {
  int index = 0;           // unique within the run; the prompt and the id carry it
  std::string id;          // WebSocket request id
  std::string prompt;
  int prompt_tokens = -1;  // tokens the prompt encodes to (BOS included); -1 without a tokenizer
  int max_tokens = 0;
  double arrival_s = 0;    // open loop: when to send, from the level's start
};

// A short public-domain-style story text, used when no --corpus is given.
std::string_view builtin_corpus();

// Number of entries in a llama2.c tokenizer file (its vocab size), or an error.
std::expected<int, std::string> llama2c_tokenizer_count(const std::string& path);

class prompt_builder {
 public:
  // tok may be null: lengths are then in words. shared_prefix_tokens needs tok.
  static std::expected<prompt_builder, std::string> make(std::string corpus, std::shared_ptr<const tokenizer> tok,
                                                        int shared_prefix_tokens);
  // A prompt unique to `index` of exactly n tokens (BOS included), or n words without a tokenizer.
  std::expected<request_spec, std::string> build(int index, int n) const;
  bool exact() const { return tok_ != nullptr; }

 private:
  int count(std::string_view text) const;
  // The shortest text `head` + corpus words from word `start` that encodes to exactly n tokens.
  std::expected<std::string, std::string> fit(std::string head, std::size_t start, int n) const;

  std::vector<std::string> words_;
  std::shared_ptr<const tokenizer> tok_;
  std::string shared_prefix_;  // ends with a newline; empty when none
};

// The requests of one sweep level: first_index numbers them (unique across levels), rate > 0
// draws Poisson arrival times.
std::expected<std::vector<request_spec>, std::string> workload_make(const options& o, const prompt_builder& prompts,
                                                                   int level_ordinal, int first_index, int n_requests,
                                                                   double rate);

}  // namespace pagedserve::loadgen
