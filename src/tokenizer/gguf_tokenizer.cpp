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

// Byte-level BPE ("gpt2"): the pre-tokenizer is what tokenizer.ggml.pre names, the tokenizer.json
// fragments of the models llama.cpp's converter gives each name (its hash of their tokenizer's output
// decides the name), as llama.cpp itself reads them.
#define PS_SPLIT(regex) R"({"type":"Split","pattern":{"Regex":")" regex R"("},"behavior":"Isolated","invert":false})"
#define PS_BYTES_AFTER R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":false})"
#define PS_SEQUENCE(...) R"({"type":"Sequence","pretokenizers":[)" __VA_ARGS__ "]}"
constexpr std::string_view qwen2_pre = PS_SEQUENCE(
    PS_SPLIT(R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+)") "," PS_BYTES_AFTER);
constexpr std::string_view llama3_pre = PS_SEQUENCE(
    PS_SPLIT(R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+)") "," PS_BYTES_AFTER);
// Mistral's Tekken (Mistral-Nemo, Mistral-Small 3): words split at case changes, single digits.
constexpr std::string_view tekken_pre = PS_SEQUENCE(
    PS_SPLIT(R"([^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+)") "," PS_BYTES_AFTER);
// SmolLM: digits one by one, then GPT-2's split.
constexpr std::string_view smollm_pre = PS_SEQUENCE(
    PS_SPLIT(R"(\\p{N})") "," R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":true})");
// DeepSeek's Llama-architecture models (DeepSeek-LLM, DeepSeek-Coder): a chain of splits.
constexpr std::string_view deepseek_coder_pre = PS_SEQUENCE(
    PS_SPLIT(R"([\\r\\n])") "," PS_SPLIT(R"(\\s?\\p{L}+)") "," PS_SPLIT(R"(\\s?\\p{P}+)") ","
    PS_SPLIT(R"([\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+)") "," PS_SPLIT(R"(\\p{N})") "," PS_BYTES_AFTER);
// (Code points as \x{...}: the letters' class holds characters that text tools normalise into others.)
constexpr std::string_view deepseek_llm_pre = PS_SEQUENCE(
    PS_SPLIT(R"([\\r\\n])") ","
    PS_SPLIT(R"(\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+)") ","
    PS_SPLIT(R"(\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+)") "," PS_SPLIT(R"(\\s+$)") "," PS_SPLIT(R"([\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+)") ","
    PS_SPLIT(R"(\\p{N}+)") "," PS_BYTES_AFTER);
#undef PS_SEQUENCE
#undef PS_BYTES_AFTER
#undef PS_SPLIT
constexpr std::string_view gpt2_pre = R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":true})";

// What a tokenizer.ggml.pre name means for the byte-level BPE built from the file.
struct bpe_pre {
  std::string_view normalizer, pre_tokenizer;
  bool ignore_merges = false;  // whole-word vocabulary entries win over merges (Llama 3, Tekken)
  bool add_bos = false;        // BOS when the file does not say (tokenizer.ggml.add_bos_token)
};
// Every name read here, aliases included.
const std::vector<std::pair<std::string_view, bpe_pre>>& bpe_pres() {
  static const std::vector<std::pair<std::string_view, bpe_pre>> table = [] {
    const bpe_pre llama3{"", llama3_pre, true, true}, gpt2{"", gpt2_pre};
    return std::vector<std::pair<std::string_view, bpe_pre>>{
        {"qwen2", {R"({"type":"NFC"})", qwen2_pre}},  // as Qwen's tokenizer.json
        {"deepseek-r1-qwen", {"", qwen2_pre}},
        {"llama-bpe", llama3}, {"llama3", llama3}, {"llama-v3", llama3}, {"falcon3", llama3}, {"pixtral", llama3},
        {"smaug-bpe", {"", llama3_pre}},
        {"tekken", {"", tekken_pre, true, true}},
        {"smollm", {"", smollm_pre}},
        {"deepseek-coder", {"", deepseek_coder_pre}},
        {"deepseek-llm", {"", deepseek_llm_pre}},
        // GPT-2's own ("gpt-2"; "gpt2" an older spelling) and models that kept it.
        {"gpt-2", gpt2}, {"gpt2", gpt2}, {"phi-2", gpt2}};
  }();
  return table;
}
std::optional<bpe_pre> bpe_pre_of(std::string_view name) {
  for (const auto& [known, pre] : bpe_pres())
    if (known == name) return pre;
  return std::nullopt;
}
std::string bpe_pre_names() {
  std::string out;
  for (const auto& [known, pre] : bpe_pres()) out += (out.empty() ? "" : ", ") + std::string(known);
  return out;
}
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
  bool bpe_add_bos = false;
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
    if (pre == "default") {
      // No name (converters before the field, or a tokenizer the converter did not recognise): GPT-2's
      // split, the nearest there is, as llama.cpp falls back to a generic one with the same warning.
      spdlog::warn("{}: no tokenizer.ggml.pre names this vocabulary's pre-tokenizer; using GPT-2's", f.name());
      pre_json = gpt2_pre;
    } else {
      const std::optional<bpe_pre> known = bpe_pre_of(pre);
      if (!known)
        return std::unexpected("tokenizer.ggml.pre '" + std::string(pre) + "' is not supported (supported: " +
                               bpe_pre_names() + "): its text would be split unlike the model's");
      normalizer_json = known->normalizer;
      pre_json = known->pre_tokenizer;
      o.ignore_merges = known->ignore_merges;
      bpe_add_bos = known->add_bos;
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
  s.add_bos = optional_bool(f, "tokenizer.ggml.add_bos_token", spm || bpe_add_bos);
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
