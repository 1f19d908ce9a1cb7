#pragma once
// Tokenizers turn text into token ids and ids back into bytes. One interface so the request path
// does not care which file format a model's vocabulary came in (llama2.c .bin
// here; tokenizer.json in hf_tokenizer.hpp).
#include <cstdint>
#include <expected>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pagedserve/ids.hpp"

namespace pagedserve {

// Bytes [begin, end) of a text.
struct text_range {
  std::size_t begin = 0, end = 0;
  friend bool operator==(const text_range&, const text_range&) = default;
};

class tokenizer {
 public:
  virtual ~tokenizer() = default;
  // Token ids for text; add_bos puts the model's BOS id first.
  virtual std::vector<token_id> encode(std::string_view text, bool add_bos) const = 0;
  // The bytes token `id` stands for when it follows token `prev` (may be a partial UTF-8 sequence).
  virtual std::string decode_piece(token_id prev, token_id id) const = 0;
  virtual int vocab_size() const = 0;
  virtual token_id bos_id() const = 0;
  virtual token_id eos_id() const = 0;

  // Optional capabilities, with defaults so every implementation keeps compiling.
  // Token ids for text with the tokenizer's own post-processor applied (Hugging Face
  // encode(text, add_special_tokens=true): Llama 2 prepends BOS, Qwen3 adds nothing).
  virtual std::vector<token_id> encode_with_special_tokens(std::string_view text) const { return encode(text, true); }
  // The text of ids as one sequence (Hugging Face decode(ids, skip_special_tokens)); equals the
  // concatenation of incremental_detokenizer pushes from prev = -1, except for clean-ups a
  // tokenizer's configuration applies to the whole text (Llama 3's clean_up_tokenization_spaces).
  virtual std::string decode(std::span<const token_id> ids, bool skip_special_tokens) const;
  // True for control tokens (BOS, EOS, <|im_end|>, ...) that a client usually should not see.
  virtual bool is_special(token_id id) const { return id == bos_id() || id == eos_id(); }
  // The id of a vocabulary or added-token string such as "<|im_end|>", if the tokenizer has one.
  virtual std::optional<token_id> token_to_id(std::string_view text) const { return std::nullopt; }
  // Where encode() may turn text into special (control) tokens: the byte ranges of special-token
  // strings in it, leftmost-longest as encode() matches them, in linear time.
  virtual std::vector<text_range> find_special_tokens(std::string_view text) const { return {}; }
  // encode(), except that a special token overlapping one of the `literal` byte ranges of text
  // (sorted, disjoint) is encoded as the ordinary text it is written with (Hugging Face's
  // split_special_tokens, there only): a user cannot type a control token into a chat message.
  virtual std::vector<token_id> encode_with_literal_ranges(std::string_view text, bool add_bos,
                                                           std::span<const text_range> literal) const {
    return encode(text, add_bos);
  }
  // The vocabulary string of id as written in the tokenizer file (byte-level tokens in GPT-2
  // form, e.g. "\u0120world"); by default the bytes it decodes to at the start of a sequence.
  virtual std::string token_text(token_id id) const { return decode_piece(-1, id); }
};

// The llama2.c tokenizer file (tokenizer.bin, tok512.bin): int32 max_token_length, then per token
// float32 score, int32 length, that many bytes. Encoding follows run.c's encode(): a dummy-prefix
// space for non-empty text, unknown code points as byte tokens (byte + 3), then greedy merges by
// highest score. Decoding follows run.c's decode(): "<0xXX>" pieces are raw bytes, and the leading
// space of a piece that follows BOS is dropped.
std::expected<std::unique_ptr<tokenizer>, std::string> llama2c_tokenizer_load(const std::filesystem::path& path,
                                                                              int vocab_size);
// Same, from bytes already in memory (the built-in default model's vocabulary).
std::expected<std::unique_ptr<tokenizer>, std::string> llama2c_tokenizer_from_bytes(std::string bytes,
                                                                                    int vocab_size);

// Turns a stream of token ids into text that never ends inside a UTF-8 character: bytes of an
// incomplete character are held until the character completes. Invalid sequences come out as U+FFFD.
class incremental_detokenizer {
 public:
  explicit incremental_detokenizer(const tokenizer& tok, token_id prev = -1) : tok_(tok), prev_(prev) {}
  // Appends token `id`; returns the text that is now complete (possibly empty).
  std::string push(token_id id);
  // Text still held at the end of the stream (an unfinished character comes out as U+FFFD).
  std::string flush();

 private:
  const tokenizer& tok_;
  token_id prev_;
  std::string pending_;  // bytes of an unfinished UTF-8 character
};

inline std::string tokenizer::decode(std::span<const token_id> ids, bool skip_special_tokens) const {
  incremental_detokenizer detok(*this);
  std::string out;
  for (const token_id id : ids)
    if (!skip_special_tokens || !is_special(id)) out += detok.push(id);
  return out + detok.flush();
}

}  // namespace pagedserve
