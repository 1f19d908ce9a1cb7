#pragma once
// The parts of a Hugging Face tokenizer.json pipeline, one class per stage, in the order encode()
// runs them: added tokens are split off the raw text, each remaining segment is normalized,
// pre-tokenized into words, and each word goes through the BPE model. Decoding maps every id to the
// bytes it stands for once at load time, so decode_piece is a table lookup.
#include "pagedserve/utf8.hpp"
#include <simdjson.h>

#include <array>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pagedserve/ids.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagedserve::hf {

template <class T>
using result = std::expected<T, std::string>;

// ---- JSON access (hf_tokenizer_load.cpp) --------------------------------------------------------

// The "type" of a tokenizer.json component, or "" when it has none.
std::string_view json_type(simdjson::dom::element e);
// A string member; an error naming `where` and `key` when missing or not a string.
result<std::string_view> json_string(simdjson::dom::element e, std::string_view key, std::string_view where);
// A boolean member, or `fallback` when it is missing or null.
bool json_bool(simdjson::dom::element e, std::string_view key, bool fallback);
// True when e has member `key` and it is not null.
bool json_has(simdjson::dom::element e, std::string_view key);

// ---- text helpers (hf_tokenizer_normalize.cpp; UTF-8 itself is pagedserve/utf8.hpp) --------------

// Replaces every occurrence of `from` (non-empty) in s.
void replace_all(std::string& s, std::string_view from, std::string_view to);
// Unicode White_Space (what lstrip/rstrip of added tokens consume).
bool is_unicode_space(char32_t cp);
// The GPT-2 byte-level alphabet: byte b is written as code point byte_to_char(b).
char32_t byte_to_char(unsigned char b);
// Inverse of byte_to_char; -1 for code points outside the alphabet.
int char_to_byte(char32_t cp);

// ---- normalizer (hf_tokenizer_normalize.cpp) -----------------------------------------------------

// The tokenizer.json "normalizer": a flat list of steps applied in order to each text segment.
class normalizer {
 public:
  static result<normalizer> from_json(std::optional<simdjson::dom::element> e);  // none or null: identity
  std::string apply(std::string_view text) const;
  bool empty() const { return steps_.empty(); }

 private:
  enum class kind { nfc, nfd, nfkc, nfkd, prepend, replace };
  struct step {
    kind k;
    std::string from;  // replace: the literal pattern
    std::string to;    // prepend: the prefix; replace: the replacement
  };
  result<void> add(simdjson::dom::element e);
  std::vector<step> steps_;
};

// ---- pre-tokenizer (hf_tokenizer_pretok.cpp) -----------------------------------------------------

class regex;  // a compiled PCRE2 pattern (UTF, UCP, JIT when available)

// The tokenizer.json "pre_tokenizer": splits one normalized segment into words. Byte-level
// models keep words as raw bytes; the BPE model maps them to the GPT-2 alphabet itself.
class pre_tokenizer {
 public:
  static result<pre_tokenizer> from_json(std::optional<simdjson::dom::element> e);  // none or null: one word
  // Appends the words of `segment`; `first` is true for the segment at the start of the input.
  void split(std::string_view segment, bool first, std::vector<std::string>& words) const;
  bool byte_level() const { return byte_level_; }

 private:
  enum class kind { split, byte_level, metaspace, digits };
  enum class behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };
  struct step {
    kind k;
    std::shared_ptr<const regex> re;  // split (string patterns are escaped into a regex), byte_level with use_regex
    behavior how = behavior::isolated;
    bool invert = false;
    bool add_prefix_space = false;  // byte_level
    std::string replacement;        // metaspace, UTF-8
    int prepend = 0;                // metaspace: 0 never, 1 first, 2 always
    bool split_words = true;        // metaspace split; digits: individual_digits
  };
  result<void> add(simdjson::dom::element e);
  void apply(const step& s, std::string_view word, bool first, std::vector<std::string>& out) const;
  std::vector<step> steps_;
  bool byte_level_ = false;
};

// ---- added tokens (hf_tokenizer_added.cpp) -------------------------------------------------------

struct added_token {
  std::string content;
  token_id id = -1;
  bool special = false;
  bool lstrip = false;       // swallow whitespace on the left
  bool rstrip = false;       // swallow whitespace on the right
  bool single_word = false;  // match only when not inside a word
  bool normalized = false;   // matched in normalized text rather than raw text
};

// A piece of the input: either an added token (id >= 0) or text for the model.
struct segment {
  std::string_view text;
  token_id id = -1;
};

// Finds added tokens in text, leftmost then longest, as Hugging Face's Aho-Corasick search does.
class added_vocab {
 public:
  void add(added_token t);
  void finish();  // indexes the tokens; call once after the last add()
  // Splits text with the tokens whose `normalized` flag equals `normalized`. A special token that
  // overlaps one of the `literal` byte ranges of text (sorted, disjoint) is left as ordinary text.
  void split(std::string_view text, bool normalized, std::vector<segment>& out,
             std::span<const text_range> literal = {}) const;
  // The ranges of the special tokens split() would see in raw text (ignoring single_word and strips).
  std::vector<text_range> find_special(std::string_view text) const;
  const std::vector<added_token>& tokens() const { return tokens_; }
  bool any(bool normalized) const { return normalized ? n_normalized_ > 0 : n_raw_ > 0; }

 private:
  // The longest token with that `normalized` flag starting at text[pos], or null.
  const added_token* longest_at(std::string_view text, std::size_t pos, bool normalized) const;

  // A byte trie over the tokens' contents; node 0 is the root.
  struct trie_node {
    std::vector<std::pair<unsigned char, std::uint32_t>> next;  // (byte, child node), sorted by byte
    std::array<std::int32_t, 2> token{-1, -1};                 // index into tokens_ ending here: [raw, normalized]
  };
  std::vector<added_token> tokens_;
  std::vector<trie_node> nodes_;
  std::size_t n_normalized_ = 0, n_raw_ = 0;
};

// ---- BPE model (hf_tokenizer_model.cpp) ----------------------------------------------------------

// (left id, right id) -> (rank, merged id), open addressing, built once at load.
class merge_table {
 public:
  struct entry {
    std::uint64_t key = ~0ull;
    std::int32_t rank = 0;
    token_id merged = -1;
  };
  void reserve(std::size_t n);
  bool insert(token_id a, token_id b, std::int32_t rank, token_id merged);  // false if present
  const entry* find(token_id a, token_id b) const;

 private:
  std::vector<entry> slots_;
  std::size_t mask_ = 0;
};

// String -> id with the keys in one arena and open addressing: a vocabulary of 150k short
// strings loads several times faster than into a node-based std::unordered_map.
class string_index {
 public:
  void reserve(std::size_t n);
  bool insert(std::string_view key, token_id id);  // false (and no change) if key is present
  std::optional<token_id> find(std::string_view key) const;

 private:
  struct slot {
    std::uint32_t tag = 0;                 // high bits of the hash, to skip most key compares
    std::uint32_t offset = 0, length = 0;  // the key in arena_, bytes
    token_id id = -1;                      // -1 when the slot is empty
  };
  void rehash(std::size_t n_slots);
  std::string arena_;
  std::vector<slot> slots_;
  std::size_t size_ = 0, mask_ = 0;
};

// The "model" section of tokenizer.json when its type is BPE: turns one pre-tokenized word into
// ids. Stateless after load, so one instance serves every thread.
class bpe_model {
 public:
  // `byte_level`: words are raw bytes written in the GPT-2 alphabet in the vocabulary.
  static result<bpe_model> from_json(simdjson::dom::element model, bool byte_level);
  // The same model from arrays (GGUF): the vocabulary strings by id ("" where unused, e.g. ids of
  // added tokens), and merges as (left, right) strings in rank order.
  struct options {
    bool byte_level = false, byte_fallback = false, fuse_unk = false, ignore_merges = false;
    token_id unk = -1;
  };
  static result<bpe_model> from_arrays(std::vector<std::string> tokens,
                                       const std::vector<std::pair<std::string_view, std::string_view>>& merges,
                                       const options& o);
  void encode_word(std::string_view word, std::vector<token_id>& out) const;
  std::optional<token_id> find(std::string_view token) const;  // by its vocabulary string
  // The vocabulary strings by id ("" where unused), moved out: the model does not need them.
  std::vector<std::string> release_tokens() { return std::move(id_to_token_); }

 private:
  result<void> load_vocab(simdjson::dom::element vocab);
  void index_vocab();  // vocab_ (and byte_vocab_) from id_to_token_
  void find_byte_ids();
  result<void> load_merges(simdjson::dom::element merges);
  result<void> add_merge(std::string_view a, std::string_view b, std::int32_t rank, std::string& scratch);
  void initial_symbols(std::string_view word, std::vector<token_id>& syms) const;
  void merge(std::vector<token_id>& syms) const;

  string_index vocab_;                    // vocabulary string -> id
  string_index byte_vocab_;               // byte-level: raw bytes -> id
  std::vector<std::string> id_to_token_;  // [n_vocab], "" where unused
  merge_table merges_;
  std::array<token_id, 256> byte_ids_{};  // byte-level: id of byte b's character; byte fallback: <0xXX>
  bool byte_level_ = false, byte_fallback_ = false, fuse_unk_ = false, ignore_merges_ = false;
  token_id unk_id_ = -1;
};

// ---- decoder (hf_tokenizer_decode.cpp) -----------------------------------------------------------

// The tokenizer.json "decoder", reduced to what each token contributes: its bytes, and whether the
// first token of a sequence loses one leading space (Strip start=1, Metaspace's prefix space).
struct decoder_table {
  std::vector<std::string> pieces;  // [n_vocab] bytes of each id
  bool strip_first_space = false;   // the first token of a sequence loses one leading ' '
  bool join_with_space = false;     // no decoder: tokens are joined with ' ' (Hugging Face's fallback)
};
// `tokens` are the vocabulary strings by id (added tokens included).
result<decoder_table> decoder_build(std::optional<simdjson::dom::element> e, const std::vector<std::string>& tokens);
// transformers' clean_up_tokenization: drops the space before . ? ! , and English contractions.
std::string cleanup_tokenization_spaces(std::string text);

// ---- the tokenizer (hf_tokenizer.cpp; assembled by hf_tokenizer_load.cpp) ------------------------

// What the post-processor puts around one sequence (TemplateProcessing's "single" template).
struct post_processor {
  std::vector<token_id> prefix, suffix;
};

// Settings tokenizer_config.json adds to tokenizer.json.
struct tokenizer_settings {
  token_id bos = -1, eos = -1;  // -1: the model has none
  bool add_bos = true;          // add_bos_token (false only when the config says so)
  bool cleanup = false;         // clean_up_tokenization_spaces, applied by decode() only
};

// The tokenizer interface over a loaded tokenizer.json. Immutable after construction: encode and
// decode hold no caches or locks, so one instance is shared by every request.
class hf_tokenizer final : public tokenizer {
 public:
  hf_tokenizer(normalizer n, pre_tokenizer p, bpe_model m, added_vocab a, decoder_table d, post_processor post,
               std::vector<std::string> tokens, tokenizer_settings s);

  std::vector<token_id> encode(std::string_view text, bool add_bos) const override;
  std::string decode_piece(token_id prev, token_id id) const override;
  int vocab_size() const override { return static_cast<int>(tokens_.size()); }
  token_id bos_id() const override { return settings_.bos; }
  token_id eos_id() const override { return settings_.eos; }
  std::vector<token_id> encode_with_special_tokens(std::string_view text) const override;
  std::string decode(std::span<const token_id> ids, bool skip_special_tokens) const override;
  bool is_special(token_id id) const override;
  std::optional<token_id> token_to_id(std::string_view text) const override;
  std::string token_text(token_id id) const override;
  std::vector<text_range> find_special_tokens(std::string_view text) const override;
  std::vector<token_id> encode_with_literal_ranges(std::string_view text, bool add_bos,
                                                   std::span<const text_range> literal) const override;

 private:
  // encode() without BOS: added tokens, then normalize, pre-tokenize and BPE each other segment.
  std::vector<token_id> encode_plain(std::string_view text, std::span<const text_range> literal = {}) const;
  void encode_segment(std::string_view text, bool first, std::vector<token_id>& out) const;

  normalizer normalizer_;
  pre_tokenizer pre_tokenizer_;
  bpe_model model_;
  added_vocab added_;
  decoder_table decoder_;
  post_processor post_;
  std::vector<std::string> tokens_;  // [n_vocab] vocabulary strings, added tokens included
  std::vector<bool> special_;        // [n_vocab]
  tokenizer_settings settings_;
};

}  // namespace pagedserve::hf
