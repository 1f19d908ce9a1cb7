// Prompt building and request plans (workload.hpp).
#include "loadgen/workload.hpp"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>

namespace pagedserve::loadgen {

std::expected<int, std::string> llama2c_tokenizer_count(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected("cannot open tokenizer '" + path + "'");
  std::int32_t max_len = 0;
  if (!in.read(reinterpret_cast<char*>(&max_len), 4)) return std::unexpected("tokenizer '" + path + "' is empty");
  int n = 0;
  for (;;) {
    float score = 0;
    std::int32_t len = 0;
    if (!in.read(reinterpret_cast<char*>(&score), 4)) break;
    if (!in.read(reinterpret_cast<char*>(&len), 4) || len < 0 || len > max_len + 16)
      return std::unexpected("tokenizer '" + path + "' is truncated or corrupt at entry " + std::to_string(n));
    in.seekg(len, std::ios::cur);
    if (!in) return std::unexpected("tokenizer '" + path + "' is truncated at entry " + std::to_string(n));
    ++n;
  }
  if (n == 0) return std::unexpected("tokenizer '" + path + "' has no entries");
  return n;
}

std::expected<prompt_builder, std::string> prompt_builder::make(std::string corpus, std::shared_ptr<const tokenizer> tok,
                                                                int shared_prefix_tokens) {
  prompt_builder b;
  b.tok_ = std::move(tok);
  std::istringstream in(corpus);
  for (std::string w; in >> w;) b.words_.push_back(std::move(w));
  if (b.words_.size() < 16) return std::unexpected("the corpus has fewer than 16 words");
  if (shared_prefix_tokens > 0) {
    if (!b.tok_) return std::unexpected("a shared prefix needs a tokenizer");
    // The system prompt ends in a newline so that its tokens do not merge with what follows.
    auto text = b.fit("You are a helpful storyteller. ", 0, shared_prefix_tokens - 1);
    if (!text) return std::unexpected("shared prefix: " + text.error());
    b.shared_prefix_ = *text + "\n";
  }
  return b;
}

int prompt_builder::count(std::string_view text) const { return static_cast<int>(tok_->encode(text, true).size()); }

std::expected<std::string, std::string> prompt_builder::fit(std::string head, std::size_t start, int n) const {
  if (count(head) > n)
    return std::unexpected("cannot fit " + std::to_string(n) + " tokens: the unique head alone has " +
                           std::to_string(count(head)));
  // Grow by whole words past n, then find the shortest character prefix that encodes to n tokens.
  // As many words at a time as tokens are missing (a word is at least one token), so a long prompt
  // takes a few encodes, not one per word (2000 tokens took a second of CPU beside the server).
  std::string text = head;
  std::size_t w = start;
  for (int have = count(text); have < n + 2; have = count(text)) {
    if (text.size() > 64u * static_cast<std::size_t>(n) + 1024) return std::unexpected("the corpus does not tokenize");
    for (int i = 0; i < n + 2 - have; ++i, ++w) {
      if (!text.empty() && text.back() != ' ') text += ' ';
      text += words_[w % words_.size()];
    }
  }
  std::size_t lo = head.size(), hi = text.size();  // count(text[0, hi)) >= n
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (count(std::string_view(text).substr(0, mid)) >= n) hi = mid;
    else lo = mid + 1;
  }
  // Token counts are nearly, not strictly, monotonic in length: look around the boundary, and
  // prefer a cut that does not end in a space.
  for (std::size_t len = lo > 8 ? lo - 8 : 0; len <= std::min(text.size(), lo + 8); ++len) {
    const std::string_view cut = std::string_view(text).substr(0, len);
    if (len >= head.size() && !cut.ends_with(' ') && count(cut) == n) return std::string(cut);
  }
  // Rare: every cut jumps over n (a byte-fallback vocabulary spends 3 tokens on each space). Fill the
  // longest cut up to 3 tokens below n with as many one-token pieces as are missing.
  for (std::size_t len = lo; len-- > head.size();) {
    const std::string base = text.substr(0, len);
    const int missing = n - count(base);
    if (missing < 1 || missing > 3) continue;
    for (const char* filler : {".", ",", "!", " a", " I", "a", "e"}) {
      std::string filled = base;
      for (int i = 0; i < missing; ++i) filled += filler;
      if (count(filled) == n) return filled;
    }
  }
  return std::unexpected("found no text of exactly " + std::to_string(n) + " tokens");
}

std::expected<request_spec, std::string> prompt_builder::build(int index, int n) const {
  request_spec r;
  r.index = index;
  r.id = "r" + std::to_string(index);
  // Words start at a different place for each request, and the head makes the prompt unique
  // from its first tokens, so no prefix cache can serve one request from another's blocks.
  const std::size_t start = (static_cast<std::size_t>(index) * 7919u) % words_.size();
  std::string head = shared_prefix_ + "Request " + std::to_string(index) + ":";
  if (!tok_) {  // n words, the head's two included
    r.prompt = head;
    for (int w = 2; w < n; ++w) r.prompt += " " + words_[(start + static_cast<std::size_t>(w)) % words_.size()];
    return r;
  }
  // Short prompts get a shorter head; prompts too short for any stay unique only by where they start.
  if (count(head) > n) head = shared_prefix_ + std::to_string(index) + ":";
  if (count(head) > n) head = shared_prefix_;
  auto text = fit(head, start, n);
  if (!text) return std::unexpected("prompt " + std::to_string(index) + ": " + text.error());
  r.prompt = std::move(*text);
  r.prompt_tokens = n;
  return r;
}

std::expected<std::vector<request_spec>, std::string> workload_make(const options& o, const prompt_builder& prompts,
                                                                   int level_ordinal, int first_index, int n_requests,
                                                                   double rate) {
  // One generator per level, so adding a level does not change the requests of the others.
  std::mt19937_64 rng(o.seed * 1000003u + static_cast<std::uint64_t>(level_ordinal));
  std::vector<request_spec> out;
  out.reserve(static_cast<std::size_t>(n_requests));
  double t = 0;
  for (int i = 0; i < n_requests; ++i) {
    const int n_prompt = o.prompt_tokens.sample(rng);
    const int n_out = o.max_tokens.sample(rng);
    auto r = prompts.build(first_index + i, n_prompt);
    if (!r) return std::unexpected(r.error());
    r->max_tokens = n_out;
    if (rate > 0) {
      // Exponential gaps: Poisson arrivals at `rate` per second; the first request goes at once.
      if (i > 0) t += -std::log(1.0 - static_cast<double>(rng() >> 11) * 0x1.0p-53) / rate;
      r->arrival_s = t;
    }
    out.push_back(std::move(*r));
  }
  return out;
}

}  // namespace pagedserve::loadgen
