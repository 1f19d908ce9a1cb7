// The tokenizer.json pre-tokenizer: splitting a normalized segment into the words BPE runs on.
// Patterns such as Qwen's and Llama 3's use \p{L}, \p{N} and (?i:...), so they go to PCRE2 with
// UTF and UCP (Unicode \s and friends), JIT-compiled when the library has a JIT; std::regex has
// neither Unicode properties nor the speed.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>

#include "tokenizer/hf_tokenizer_internal.hpp"

namespace pagedserve::hf {

class regex {
 public:
  static result<std::shared_ptr<const regex>> compile(std::string_view pattern, bool literal) {
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    std::uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
    if (literal) options |= PCRE2_LITERAL;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &err,
                                     &err_offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      return std::unexpected("pre-tokenizer regex does not compile at offset " + std::to_string(err_offset) + ": " +
                             reinterpret_cast<const char*>(msg));
    }
    auto re = std::shared_ptr<regex>(new regex(code));
    re->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    return re;
  }
  regex(const regex&) = delete;
  regex& operator=(const regex&) = delete;
  ~regex() { pcre2_code_free(code_); }

  // Calls fn(begin, end) for each successive non-empty match in s.
  template <class F>
  void for_each_match(std::string_view s, F&& fn) const {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
    if (md == nullptr) return;
    const auto subject = reinterpret_cast<PCRE2_SPTR>(s.data());
    std::size_t offset = 0;
    std::uint32_t no_jit = 0;
    while (offset < s.size()) {
      int rc = pcre2_match(code_, subject, s.size(), offset, no_jit, md, nullptr);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT && no_jit == 0) {
        no_jit = PCRE2_NO_JIT;  // a pathological input: the interpreter has no small fixed stack
        continue;
      }
      if (rc < 0) break;  // no match (or a match limit): the rest is one gap
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      if (ov[1] <= ov[0]) {  // an empty match: step over one character
        offset = ov[0] + utf8_decode(s, ov[0]).length;
        continue;
      }
      fn(ov[0], ov[1]);
      offset = ov[1];
    }
    pcre2_match_data_free(md);
  }

  bool jit() const { return jit_; }

 private:
  explicit regex(pcre2_code* code) : code_(code) {}
  pcre2_code* code_;
  bool jit_ = false;
};

namespace {

// GPT-2's own pattern, used by a ByteLevel pre-tokenizer with use_regex.
constexpr std::string_view gpt2_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

constexpr std::string_view metaspace_default = "\xE2\x96\x81";  // U+2581

}  // namespace

result<pre_tokenizer> pre_tokenizer::from_json(std::optional<simdjson::dom::element> e) {
  pre_tokenizer p;
  if (!e || e->is_null()) return p;
  if (auto ok = p.add(*e); !ok) return std::unexpected(ok.error());
  return p;
}

result<void> pre_tokenizer::add(simdjson::dom::element e) {
  const std::string_view type = json_type(e);
  step s{};
  if (type == "Sequence") {
    simdjson::dom::array list;
    if (e["pretokenizers"].get(list) != simdjson::SUCCESS)
      return std::unexpected("pre_tokenizer Sequence without a 'pretokenizers' array");
    for (simdjson::dom::element sub : list)
      if (auto ok = add(sub); !ok) return ok;
    return {};
  }
  if (type == "Split") {
    simdjson::dom::element pattern;
    std::string_view text;
    bool literal = false;
    if (e["pattern"].get(pattern) != simdjson::SUCCESS) return std::unexpected("pre_tokenizer Split without a pattern");
    if (pattern["Regex"].get(text) != simdjson::SUCCESS) {
      if (pattern["String"].get(text) != simdjson::SUCCESS)
        return std::unexpected("pre_tokenizer Split: pattern must be {\"Regex\": ...} or {\"String\": ...}");
      literal = true;
    }
    auto re = regex::compile(text, literal);
    if (!re) return std::unexpected(re.error());
    auto how = json_string(e, "behavior", "pre_tokenizer Split");
    if (!how) return std::unexpected(how.error());
    static constexpr std::pair<std::string_view, behavior> names[] = {
        {"Removed", behavior::removed},
        {"Isolated", behavior::isolated},
        {"MergedWithPrevious", behavior::merged_with_previous},
        {"MergedWithNext", behavior::merged_with_next},
        {"Contiguous", behavior::contiguous}};
    bool known = false;
    for (const auto& [name, b] : names)
      if (*how == name) s.how = b, known = true;
    if (!known) return std::unexpected("pre_tokenizer Split: unknown behavior '" + std::string(*how) + "'");
    s.k = kind::split;
    s.re = *re;
    s.invert = json_bool(e, "invert", false);
  } else if (type == "Digits") {
    s.k = kind::split;
    const bool individual = json_bool(e, "individual_digits", false);
    auto re = regex::compile(individual ? R"(\p{N})" : R"(\p{N}+)", false);
    if (!re) return std::unexpected(re.error());
    s.re = *re;
  } else if (type == "ByteLevel") {
    s.k = kind::byte_level;
    s.add_prefix_space = json_bool(e, "add_prefix_space", true);
    if (json_bool(e, "use_regex", true)) {
      auto re = regex::compile(gpt2_pattern, false);
      if (!re) return std::unexpected(re.error());
      s.re = *re;
    }
    byte_level_ = true;
  } else if (type == "Metaspace") {
    s.k = kind::metaspace;
    std::string_view rep = metaspace_default;
    if (json_has(e, "replacement")) {
      auto r = json_string(e, "replacement", "pre_tokenizer Metaspace");
      if (!r) return std::unexpected(r.error());
      rep = *r;
    }
    s.replacement = std::string(rep);
    s.prepend = json_bool(e, "add_prefix_space", true) ? 2 : 0;
    std::string_view scheme;
    if (e["prepend_scheme"].get(scheme) == simdjson::SUCCESS)
      s.prepend = scheme == "first" ? 1 : scheme == "never" ? 0 : 2;
    s.split_words = json_bool(e, "split", true);
  } else {
    return std::unexpected("unsupported pre_tokenizer type '" + std::string(type) + "'");
  }
  steps_.push_back(std::move(s));
  return {};
}

void pre_tokenizer::split(std::string_view segment, bool first, std::vector<std::string>& words) const {
  std::vector<std::string> cur{std::string(segment)}, next;
  for (const step& s : steps_) {
    next.clear();
    for (std::size_t i = 0; i < cur.size(); ++i) apply(s, cur[i], first && i == 0, next);
    cur.swap(next);
  }
  for (std::string& w : cur)
    if (!w.empty()) words.push_back(std::move(w));
}

void pre_tokenizer::apply(const step& s, std::string_view word, bool first, std::vector<std::string>& out) const {
  if (s.k == kind::metaspace) {
    std::string w;
    w.reserve(word.size() + 8);
    for (const char c : word) {
      if (c == ' ')
        w.append(s.replacement);
      else
        w.push_back(c);
    }
    const bool starts = w.starts_with(s.replacement);
    if (!starts && (s.prepend == 2 || (s.prepend == 1 && first))) w.insert(0, s.replacement);
    if (!s.split_words) {
      out.push_back(std::move(w));
      return;
    }
    // Split on the replacement, each piece starting with it (MergedWithNext).
    std::size_t start = 0;
    for (std::size_t at = w.find(s.replacement, 1); at != std::string::npos; at = w.find(s.replacement, at + 1)) {
      if (at > start) out.push_back(w.substr(start, at - start));
      start = at;
    }
    if (start < w.size()) out.push_back(w.substr(start));
    return;
  }
  std::string prefixed;
  if (s.k == kind::byte_level) {
    if (s.add_prefix_space && !word.starts_with(' ')) {
      prefixed = " " + std::string(word);
      word = prefixed;
    }
    if (!s.re) {
      out.emplace_back(word);
      return;
    }
  }
  // Pieces covering the word in order, each marked as a match or not.
  std::vector<std::pair<std::pair<std::size_t, std::size_t>, bool>> parts;
  std::size_t last = 0;
  s.re->for_each_match(word, [&](std::size_t b, std::size_t e) {
    if (b > last) parts.push_back({{last, b}, s.invert});
    parts.push_back({{b, e}, !s.invert});
    last = e;
  });
  if (last < word.size()) parts.push_back({{last, word.size()}, s.invert});

  std::vector<std::pair<std::size_t, std::size_t>> spans;
  bool prev_match = false;
  switch (s.how) {
    case behavior::isolated:
      for (const auto& [span, m] : parts) spans.push_back(span);
      break;
    case behavior::removed:
      for (const auto& [span, m] : parts)
        if (!m) spans.push_back(span);
      break;
    case behavior::merged_with_previous:
      for (const auto& [span, m] : parts) {
        if (m && !prev_match && !spans.empty())
          spans.back().second = span.second;
        else
          spans.push_back(span);
        prev_match = m;
      }
      break;
    case behavior::contiguous:
      for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i > 0 && parts[i].second == prev_match)
          spans.back().second = parts[i].first.second;
        else
          spans.push_back(parts[i].first);
        prev_match = parts[i].second;
      }
      break;
    case behavior::merged_with_next:
      for (std::size_t i = parts.size(); i-- > 0;) {
        const auto& [span, m] = parts[i];
        if (m && !prev_match && !spans.empty())
          spans.back().first = span.first;
        else
          spans.push_back(span);
        prev_match = m;
      }
      std::reverse(spans.begin(), spans.end());
      break;
  }
  for (const auto& [b, e] : spans)
    if (e > b) out.emplace_back(word.substr(b, e - b));
}

}  // namespace pagedserve::hf
