#pragma once
// What the tokenizer fuzz targets do with one input, whichever tokenizers they loaded: the request
// path encodes client text, and the stream path detokenizes whatever ids the model samples.
#include <simdjson.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <expected>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.hpp"

namespace pagedserve::fuzz {

// Aborts (a libFuzzer crash, with the input saved) when a documented promise is broken.
inline void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "broken promise: %s\n", what);
  std::abort();
}

// Streams ids through the incremental detokenizer: its output must always be valid UTF-8.
inline void detokenize_checked(const tokenizer& tok, std::span<const token_id> ids) {
  incremental_detokenizer detok(tok);
  std::string out;
  for (const token_id id : ids) out += detok.push(id);
  out += detok.flush();
  require(simdjson::validate_utf8(out.data(), out.size()), "incremental_detokenizer emitted invalid UTF-8");
}

// Encodes `text` both ways (every id must index the embedding table), decodes the result, then
// decodes the raw bytes read as ids (two bytes each, shifted so negative and past-the-end ids occur).
inline void tokenizer_exercise(const tokenizer& tok, std::string_view text, bool flag) {
  const int n_vocab = tok.vocab_size();
  for (const auto& ids : {tok.encode(text, flag), tok.encode_with_special_tokens(text)}) {
    for (const token_id id : ids) require(id >= 0 && id < n_vocab, "encode produced an id outside the vocabulary");
    detokenize_checked(tok, ids);
    (void)tok.decode(ids, flag);
  }
  std::vector<token_id> raw;
  for (std::size_t i = 0; i + 1 < text.size(); i += 2) {
    const auto v = static_cast<unsigned char>(text[i]) | (static_cast<unsigned char>(text[i + 1]) << 8);
    raw.push_back(static_cast<token_id>(v % (n_vocab + 16)) - 8);
  }
  detokenize_checked(tok, raw);
  (void)tok.decode(raw, !flag);
}

using tokenizer_list = std::vector<std::unique_ptr<tokenizer>>;

// Keeps a loaded tokenizer, or ends the fuzzer saying why: the targets need ../shared's files.
inline void tokenizer_list_add(tokenizer_list& into, std::expected<std::unique_ptr<tokenizer>, std::string> tok,
                               const std::string& name) {
  if (!tok) {
    std::fprintf(stderr, "cannot load %s (is ../shared beside the clone?): %s\n", name.c_str(), tok.error().c_str());
    std::exit(1);
  }
  into.push_back(std::move(*tok));
}

// One fuzz input: its first byte picks the tokenizer (low bits) and the flag (top bit); the rest is text.
inline void tokenizer_fuzz_input(const tokenizer_list& toks, const std::uint8_t* data, std::size_t size) {
  if (size == 0) return;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  tokenizer_exercise(*toks[data[0] % toks.size()], text, (data[0] & 0x80) != 0);
}

}  // namespace pagedserve::fuzz
