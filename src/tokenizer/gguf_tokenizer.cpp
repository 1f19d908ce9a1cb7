// The tokenizer a GGUF file embeds (tokenizer.ggml.*), assembled from the Hugging Face pipeline
// stages: the vocabulary and merges come from the file's arrays, and the small normalizer /
// pre-tokenizer / decoder descriptions are the tokenizer.json fragments Hugging Face uses for the
// same tokenizer family, so a GGUF and its source tokenizer.json encode alike.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_map>

#include "model/gguf_model.hpp"
#include "tokenizer/hf_tokenizer_internal.hpp"

namespace pagedserve {
namespace {

using hf::result;

// llama.cpp's token types (tokenizer.ggml.token_type).
enum token_type : std::int64_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

// SentencePiece ("llama"): "▁" marks spaces, a leading one is added, bytes fall back to <0xXX>.
constexpr std::string_view spm_normalizer_prefixed =
    R"({"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"\u2581"},)"
    R"({"type":"Replace","pattern":{"String":" "},"content":"\u2581"}]})";
constexpr std::string_view spm_normalizer = R"({"type":"Replace","pattern":{"String":" "},"content":"\u2581"})";
constexpr std::string_view spm_decoder_prefixed =
    R"({"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},)"
    R"({"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]})";
constexpr std::string_view spm_decoder =
    R"({"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},)"
    R"({"type":"ByteFallback"},{"type":"Fuse"}]})";

// Byte-level BPE ("gpt2"): the pre-tokenizer regex is what tokenizer.ggml.pre names.
constexpr std::string_view qwen2_pre =
    R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":)"
    R"("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},)"
    R"("behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]})";
constexpr std::string_view llama3_pre =
    R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":)"
    R"("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},)"
    R"("behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]})";
constexpr std::string_view gpt2_pre = R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":true})";
constexpr std::string_view byte_level_decoder = R"({"type":"ByteLevel"})";

// One pipeline stage built from its tokenizer.json description (parsed once, here).
template <class Build>
auto from_fragment(std::string_view json, Build build) -> decltype(build(std::optional<simdjson::dom::element>{})) {
  if (json.empty()) return build(std::nullopt);
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  if (parser.parse(simdjson::padded_string(json)).get(e) != simdjson::SUCCESS)
    return std::unexpected("internal tokenizer description does not parse");
  return build(e);
}

struct vocab_arrays {
  std::vector<std::string_view> tokens;
  std::vector<std::int64_t> types;  // [n] token_type (normal when the file has none)
  std::vector<float> scores;        // [n] or empty
};

// SentencePiece BPE keeps scores instead of merges. Hugging Face's converter (convert_slow_tokenizer's
// SentencePieceExtractor) derives the merges: every split of a piece into two vocabulary pieces,
// ordered by the merged piece's score (highest first), ties by the ids of the two halves.
std::vector<std::pair<std::string_view, std::string_view>> spm_merges(const std::vector<std::string>& vocab,
                                                                      const std::vector<float>& scores) {
  std::unordered_map<std::string_view, token_id> ids;
  ids.reserve(vocab.size());
  for (std::size_t i = 0; i < vocab.size(); ++i)
    if (!vocab[i].empty()) ids.emplace(vocab[i], static_cast<token_id>(i));
  struct merge {
    float score;
    token_id left, right;
    std::string_view a, b;
  };
  std::vector<merge> merges;
  for (std::size_t i = 0; i < vocab.size(); ++i) {
    const std::string_view piece = vocab[i];
    const std::size_t first = merges.size();
    for (std::size_t pos = utf8_decode(piece, 0).length; pos < piece.size(); pos += utf8_decode(piece, pos).length) {
      const auto l = ids.find(piece.substr(0, pos)), r = ids.find(piece.substr(pos));
      if (l != ids.end() && r != ids.end()) merges.push_back({scores[i], l->second, r->second, l->first, r->first});
    }
    std::sort(merges.begin() + static_cast<std::ptrdiff_t>(first), merges.end(),
              [](const merge& x, const merge& y) { return std::pair(x.left, x.right) < std::pair(y.left, y.right); });
  }
  std::stable_sort(merges.begin(), merges.end(), [](const merge& x, const merge& y) { return x.score > y.score; });
  std::vector<std::pair<std::string_view, std::string_view>> out;
  out.reserve(merges.size());
  for (const merge& m : merges) out.emplace_back(m.a, m.b);
  return out;
}

std::vector<std::pair<std::string_view, std::string_view>> split_merges(const std::vector<std::string_view>& lines,
                                                                        std::string& error) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  out.reserve(lines.size());
  for (const std::string_view line : lines) {
    const std::size_t sp = line.find(' ');
    if (sp == std::string_view::npos || line.find(' ', sp + 1) != std::string_view::npos) {
      error = "merge '" + std::string(line) + "' is not two tokens separated by one space";
      return {};
    }
    out.emplace_back(line.substr(0, sp), line.substr(sp + 1));
  }
  return out;
}

result<vocab_arrays> read_vocab(const gguf_file& f) {
  vocab_arrays v;
  auto tokens = f.get_strings("tokenizer.ggml.tokens");
  if (!tokens) return std::unexpected(tokens.error());
  v.tokens = std::move(*tokens);
  if (v.tokens.empty() || v.tokens.size() > (1u << 24)) return std::unexpected("tokenizer.ggml.tokens has a bad size");
  v.types.assign(v.tokens.size(), normal);
  if (f.find("tokenizer.ggml.token_type")) {
    auto types = f.get_ints("tokenizer.ggml.token_type");
    if (!types) return std::unexpected(types.error());
    if (types->size() != v.tokens.size()) return std::unexpected("tokenizer.ggml.token_type and tokens differ in length");
    v.types = std::move(*types);
  }
  if (f.find("tokenizer.ggml.scores")) {
    auto scores = f.get_floats("tokenizer.ggml.scores");
    if (!scores) return std::unexpected(scores.error());
    if (scores->size() != v.tokens.size()) return std::unexpected("tokenizer.ggml.scores and tokens differ in length");
    v.scores = std::move(*scores);
  }
  return v;
}

token_id optional_id(const gguf_file& f, const char* key, std::size_t n_vocab) {
  auto id = f.get_uint(key);
  return id && *id < n_vocab ? static_cast<token_id>(*id) : -1;
}

bool optional_bool(const gguf_file& f, const char* key, bool fallback) {
  auto b = f.get_bool(key);
  return b ? *b : fallback;
}

result<std::unique_ptr<tokenizer>> build(const gguf_file& f) {
  std::string_view kind;
  if (auto k = f.get_string("tokenizer.ggml.model"); k) kind = *k; else return std::unexpected(k.error());
  if (kind != "llama" && kind != "gpt2")
    return std::unexpected("tokenizer.ggml.model '" + std::string(kind) + "' is not supported (llama, gpt2)");
  const bool spm = kind == "llama";
  auto arrays = read_vocab(f);
  if (!arrays) return std::unexpected(arrays.error());
  const std::size_t n = arrays->tokens.size();
  std::string_view pre = "default";
  if (auto p = f.get_string("tokenizer.ggml.pre")) pre = *p;

  // Control and user-defined tokens are matched in the raw text, before the model sees it.
  std::vector<std::string> tokens(arrays->tokens.begin(), arrays->tokens.end()), model_vocab(n);
  hf::added_vocab added;
  token_id unk = optional_id(f, "tokenizer.ggml.unknown_token_id", n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t t = arrays->types[i];
    if (t == unknown && unk < 0) unk = static_cast<token_id>(i);
    if (t == control || t == user_defined || (t == unknown && spm)) {
      added.add({.content = tokens[i], .id = static_cast<token_id>(i), .special = t != user_defined});
      if (t != unknown) continue;
    }
    model_vocab[i] = tokens[i];
  }
  added.finish();

  hf::bpe_model::options o;
  std::string_view normalizer_json, pre_json, decoder_json;
  std::vector<std::pair<std::string_view, std::string_view>> merges;
  std::vector<std::string_view> merge_lines;
  if (spm) {
    if (arrays->scores.empty()) return std::unexpected("a SentencePiece (llama) vocabulary needs tokenizer.ggml.scores");
    const bool prefix = optional_bool(f, "tokenizer.ggml.add_space_prefix", true);
    normalizer_json = prefix ? spm_normalizer_prefixed : spm_normalizer;
    decoder_json = prefix ? spm_decoder_prefixed : spm_decoder;
    o.byte_fallback = true;
    o.fuse_unk = true;
    o.unk = unk;
    merges = spm_merges(model_vocab, arrays->scores);
  } else {
    auto lines = f.get_strings("tokenizer.ggml.merges");
    if (!lines) return std::unexpected(lines.error());
    merge_lines = std::move(*lines);
    std::string error;
    merges = split_merges(merge_lines, error);
    if (!error.empty()) return std::unexpected("tokenizer.ggml.merges: " + error);
    o.byte_level = true;
    decoder_json = byte_level_decoder;
    if (pre == "qwen2") {
      normalizer_json = R"({"type":"NFC"})";
      pre_json = qwen2_pre;
    } else if (pre == "llama-bpe" || pre == "llama3") {
      pre_json = llama3_pre;
      o.ignore_merges = true;  // as Llama 3's tokenizer.json (and llama.cpp for this pre-tokenizer)
    } else {
      // llama.cpp's converter names GPT-2's own pre-tokenizer "gpt-2"; "default" and "gpt2" are older spellings.
      if (pre != "default" && pre != "gpt2" && pre != "gpt-2")
        spdlog::warn("{}: tokenizer.ggml.pre '{}' is not known here; using GPT-2's pre-tokenizer", f.name(), pre);
      pre_json = gpt2_pre;
    }
  }

  auto norm = from_fragment(normalizer_json, hf::normalizer::from_json);
  if (!norm) return std::unexpected(norm.error());
  auto pre_tok = from_fragment(pre_json, hf::pre_tokenizer::from_json);
  if (!pre_tok) return std::unexpected(pre_tok.error());
  auto model = hf::bpe_model::from_arrays(std::move(model_vocab), merges, o);
  if (!model) return std::unexpected("tokenizer: " + model.error());
  auto dec = from_fragment(decoder_json, [&](auto e) { return hf::decoder_build(e, tokens); });
  if (!dec) return std::unexpected(dec.error());

  hf::tokenizer_settings s;
  s.bos = optional_id(f, "tokenizer.ggml.bos_token_id", n);
  s.eos = optional_id(f, "tokenizer.ggml.eos_token_id", n);
  // llama.cpp's defaults when the file does not say: SentencePiece and Llama 3 add BOS, GPT-2 BPE does not.
  s.add_bos = optional_bool(f, "tokenizer.ggml.add_bos_token", spm || pre == "llama-bpe" || pre == "llama3");
  s.cleanup = optional_bool(f, "tokenizer.ggml.clean_spaces", false);
  hf::post_processor post;
  if (s.add_bos && s.bos >= 0) post.prefix.push_back(s.bos);
  if (optional_bool(f, "tokenizer.ggml.add_eos_token", false) && s.eos >= 0) post.suffix.push_back(s.eos);
  return std::make_unique<hf::hf_tokenizer>(std::move(*norm), std::move(*pre_tok), std::move(*model), std::move(added),
                                            std::move(*dec), std::move(post), std::move(tokens), s);
}

}  // namespace

std::expected<std::unique_ptr<tokenizer>, std::string> gguf_tokenizer_from(const gguf_file& file) {
  auto tok = build(file);
  if (!tok) return std::unexpected(file.name() + ": " + tok.error());
  return std::move(*tok);
}

std::expected<std::unique_ptr<tokenizer>, std::string> gguf_tokenizer_load(const std::filesystem::path& path) {
  auto file = gguf_file::open(path);
  if (!file) return std::unexpected(file.error());
  return gguf_tokenizer_from(*file);
}

}  // namespace pagedserve
