// The tokenizer.json decoder, evaluated once per vocabulary entry at load time. Every decoder these
// files use acts on each token alone (ByteLevel, Replace, ByteFallback, Metaspace) or only on the
// start of the whole text (Fuse then Strip, Metaspace's prefix space), so the bytes of a token are
// a fixed string plus one rule for the first token of a sequence, and decode_piece stays exact
// and streaming-safe.
#include "tokenizer/hf_tokenizer_internal.hpp"

namespace pagedserve::hf {
namespace {

// What one decoder step does to one token's text.
struct token_step {
  enum class kind { byte_level, replace, byte_fallback } k;
  std::string from, to;  // replace
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;  // Hugging Face writes byte tokens in upper case only
}

void apply(const token_step& s, std::string& t) {
  switch (s.k) {
    case token_step::kind::byte_level: {
      // Characters outside the byte alphabet (added tokens such as "<|im_start|>" are inside it,
      // but not every added token is) leave the whole token as its UTF-8 text, as Hugging Face does.
      std::string raw;
      for (std::size_t pos = 0; pos < t.size();) {
        const utf8_char ch = utf8_decode(t, pos);
        const int b = char_to_byte(ch.cp);
        if (b < 0) return;
        raw.push_back(static_cast<char>(b));
        pos += ch.length;
      }
      t = std::move(raw);
      return;
    }
    case token_step::kind::replace:
      replace_all(t, s.from, s.to);
      return;
    case token_step::kind::byte_fallback:
      if (t.size() == 6 && t.starts_with("<0x") && t[5] == '>' && hex_digit(t[3]) >= 0 && hex_digit(t[4]) >= 0)
        t = std::string(1, static_cast<char>(hex_digit(t[3]) * 16 + hex_digit(t[4])));
      return;
  }
}

struct decoder_spec {
  std::vector<token_step> steps;
  bool fused = false;
  bool strip_first_space = false;
};

result<void> parse(simdjson::dom::element e, decoder_spec& d) {
  const std::string_view type = json_type(e);
  if (type == "Sequence") {
    simdjson::dom::array list;
    if (e["decoders"].get(list) != simdjson::SUCCESS)
      return std::unexpected("decoder Sequence without a 'decoders' array");
    for (simdjson::dom::element sub : list)
      if (auto ok = parse(sub, d); !ok) return ok;
    return {};
  }
  if (type == "ByteLevel") {
    d.steps.push_back({token_step::kind::byte_level, {}, {}});
  } else if (type == "ByteFallback") {
    d.steps.push_back({token_step::kind::byte_fallback, {}, {}});
  } else if (type == "Fuse") {
    d.fused = true;
  } else if (type == "Replace") {
    simdjson::dom::element pattern;
    std::string_view from;
    if (e["pattern"].get(pattern) != simdjson::SUCCESS || pattern["String"].get(from) != simdjson::SUCCESS)
      return std::unexpected("decoder Replace: only a {\"String\": ...} pattern is supported");
    auto to = json_string(e, "content", "decoder Replace");
    if (!to) return std::unexpected(to.error());
    d.steps.push_back({token_step::kind::replace, std::string(from), std::string(*to)});
  } else if (type == "Strip") {
    std::string_view content;
    std::int64_t start = 0, stop = 0;
    if (e["content"].get(content) != simdjson::SUCCESS || e["start"].get(start) != simdjson::SUCCESS ||
        e["stop"].get(stop) != simdjson::SUCCESS)
      return std::unexpected("decoder Strip needs content, start and stop");
    if (content != " " || start > 1 || start < 0 || stop != 0 || (start == 1 && !d.fused))
      return std::unexpected("decoder Strip: only one leading ' ' of the fused text is supported");
    d.strip_first_space = start == 1;
  } else if (type == "Metaspace") {
    std::string_view rep = "\xE2\x96\x81";
    if (json_has(e, "replacement")) {
      auto r = json_string(e, "replacement", "decoder Metaspace");
      if (!r) return std::unexpected(r.error());
      rep = *r;
    }
    bool prefix = json_bool(e, "add_prefix_space", true);
    std::string_view scheme;
    if (e["prepend_scheme"].get(scheme) == simdjson::SUCCESS) prefix = scheme != "never";
    d.steps.push_back({token_step::kind::replace, std::string(rep), " "});
    d.strip_first_space = d.strip_first_space || prefix;
  } else {
    return std::unexpected("unsupported decoder type '" + std::string(type) + "'");
  }
  return {};
}

}  // namespace

result<decoder_table> decoder_build(std::optional<simdjson::dom::element> e, const std::vector<std::string>& tokens) {
  decoder_table t;
  decoder_spec spec;
  if (!e || e->is_null()) {
    t.join_with_space = true;
  } else if (auto ok = parse(*e, spec); !ok) {
    return std::unexpected(ok.error());
  }
  t.strip_first_space = spec.strip_first_space;
  t.pieces.reserve(tokens.size());
  for (const std::string& token : tokens) {
    std::string piece = token;
    for (const token_step& s : spec.steps) apply(s, piece);
    t.pieces.push_back(std::move(piece));
  }
  return t;
}

std::string cleanup_tokenization_spaces(std::string text) {
  static constexpr std::pair<std::string_view, std::string_view> rules[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : rules) replace_all(text, from, to);
  return text;
}

}  // namespace pagedserve::hf
