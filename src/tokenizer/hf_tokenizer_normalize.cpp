// Text helpers and the tokenizer.json normalizer. Unicode normalization forms come from ICU
// (Debian's libicu), whose tables are kept current with the Unicode version: Qwen3 NFC-normalizes
// its input, and a hand-made composition table would silently miss scripts.
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include "tokenizer/hf_tokenizer_internal.hpp"

namespace pagedserve::hf {
namespace {

const icu::Normalizer2* icu_instance(int form) {
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case 0:
      n = icu::Normalizer2::getNFCInstance(err);
      break;
    case 1:
      n = icu::Normalizer2::getNFDInstance(err);
      break;
    case 2:
      n = icu::Normalizer2::getNFKCInstance(err);
      break;
    default:
      n = icu::Normalizer2::getNFKDInstance(err);
      break;
  }
  return U_SUCCESS(err) ? n : nullptr;
}

// Text is valid UTF-8 here (encode sanitizes first); ASCII is already in every normal form.
std::string icu_normalize(const icu::Normalizer2& n, std::string_view text) {
  bool ascii = true;
  for (const char c : text) ascii &= static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  icu::StringByteSink<std::string> sink(&out);
  UErrorCode err = U_ZERO_ERROR;
  n.normalizeUTF8(0, icu::StringPiece(text.data(), static_cast<std::int32_t>(text.size())), sink, nullptr, err);
  return U_SUCCESS(err) ? out : std::string(text);
}

}  // namespace

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  std::size_t start = 0;
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, start)) {
    out.append(s, start, at - start).append(to);
    start = at + from.size();
  }
  if (start == 0) return;
  out.append(s, start);
  s = std::move(out);
}

bool is_unicode_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes
// are written as U+0100.. in byte order, so every byte is a visible character.
char32_t byte_to_char(unsigned char b) {
  const auto printable = [](int x) { return (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174; };
  if (printable(b)) return b;
  int n = 0;
  for (int x = 0; x < b; ++x) n += printable(x) ? 0 : 1;
  return static_cast<char32_t>(256 + n);
}

int char_to_byte(char32_t cp) {
  static const auto table = [] {
    std::array<std::int16_t, 324> t{};
    t.fill(-1);
    for (int b = 0; b < 256; ++b) t[byte_to_char(static_cast<unsigned char>(b))] = static_cast<std::int16_t>(b);
    return t;
  }();
  return cp < table.size() ? table[cp] : -1;
}

result<normalizer> normalizer::from_json(std::optional<simdjson::dom::element> e) {
  normalizer n;
  if (!e || e->is_null()) return n;
  if (auto ok = n.add(*e); !ok) return std::unexpected(ok.error());
  return n;
}

result<void> normalizer::add(simdjson::dom::element e) {
  const std::string_view type = json_type(e);
  if (type == "Sequence") {
    simdjson::dom::array list;
    if (e["normalizers"].get(list) != simdjson::SUCCESS)
      return std::unexpected("normalizer Sequence without a 'normalizers' array");
    for (simdjson::dom::element sub : list)
      if (auto ok = add(sub); !ok) return ok;
    return {};
  }
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    const kind k = type == "NFC" ? kind::nfc : type == "NFD" ? kind::nfd : type == "NFKC" ? kind::nfkc : kind::nfkd;
    if (icu_instance(static_cast<int>(k)) == nullptr)
      return std::unexpected("ICU has no " + std::string(type) + " data");
    steps_.push_back({k, {}, {}});
    return {};
  }
  if (type == "Prepend") {
    auto p = json_string(e, "prepend", "normalizer Prepend");
    if (!p) return std::unexpected(p.error());
    steps_.push_back({kind::prepend, {}, std::string(*p)});
    return {};
  }
  if (type == "Replace") {
    simdjson::dom::element pattern;
    std::string_view from;
    if (e["pattern"].get(pattern) != simdjson::SUCCESS || pattern["String"].get(from) != simdjson::SUCCESS)
      return std::unexpected("normalizer Replace: only a {\"String\": ...} pattern is supported");
    auto to = json_string(e, "content", "normalizer Replace");
    if (!to) return std::unexpected(to.error());
    steps_.push_back({kind::replace, std::string(from), std::string(*to)});
    return {};
  }
  return std::unexpected("unsupported normalizer type '" + std::string(type) + "'");
}

std::string normalizer::apply(std::string_view text) const {
  std::string s(text);
  for (const step& st : steps_) {
    switch (st.k) {
      case kind::nfc:
      case kind::nfd:
      case kind::nfkc:
      case kind::nfkd:
        s = icu_normalize(*icu_instance(static_cast<int>(st.k)), s);
        break;
      case kind::prepend:
        if (!s.empty()) s.insert(0, st.to);  // as Hugging Face: nothing is prepended to empty text
        break;
      case kind::replace:
        replace_all(s, st.from, st.to);
        break;
    }
  }
  return s;
}

}  // namespace pagedserve::hf
