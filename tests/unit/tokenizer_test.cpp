// The llama2.c tokenizer against run.c: golden prompt ids and decoded text from stories260K.json,
// Llama 2 ids from tokenizers.json, a literal port of run.c encode() on random strings, corrupt
// files, and the incremental detokenizer's UTF-8 handling.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <unordered_map>

#include "tokenizer/tokenizer.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

namespace fs = std::filesystem;

// ---- helpers -------------------------------------------------------------------------------------

// A strict UTF-8 check written independently of the detokenizer's.
bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    std::uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (std::size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    const std::uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

// Decodes ids (the BOS-less tail of a sequence) through the detokenizer, checking every chunk.
std::string detokenize(const tokenizer& tok, const std::vector<token_id>& ids, token_id prev = 1) {
  incremental_detokenizer detok(tok, prev);
  std::string out;
  for (const token_id id : ids) {
    const std::string chunk = detok.push(id);
    EXPECT_TRUE(valid_utf8(chunk)) << "chunk after id " << id;
    out += chunk;
  }
  const std::string tail = detok.flush();
  EXPECT_TRUE(valid_utf8(tail));
  return out + tail;
}

// Raw bytes of ids decoded piece by piece (no UTF-8 handling), as run.c prints them.
std::string decode_raw(const tokenizer& tok, const std::vector<token_id>& ids, token_id prev = 1) {
  std::string out;
  for (const token_id id : ids) {
    out += tok.decode_piece(prev, id);
    prev = id;
  }
  return out;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void put_i32(std::string& s, std::int32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
void put_f32(std::string& s, float v) { s.append(reinterpret_cast<const char*>(&v), 4); }

// A llama2.c vocabulary in file format: <unk>, <s>, </s>, 256 byte pieces, then `extra`.
std::string make_vocab(const std::vector<std::pair<std::string, float>>& extra) {
  std::vector<std::pair<std::string, float>> all = {{"<unk>", 0}, {"\n<s>\n", 0}, {"\n</s>\n", 0}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    all.emplace_back(name, 0);
  }
  all.insert(all.end(), extra.begin(), extra.end());
  std::size_t max_len = 0;
  for (const auto& [p, s] : all) max_len = std::max(max_len, p.size());
  std::string out;
  put_i32(out, static_cast<std::int32_t>(max_len));
  for (const auto& [p, s] : all) {
    put_f32(out, s);
    put_i32(out, static_cast<std::int32_t>(p.size()));
    out += p;
  }
  return out;
}

// 259 " ", 260 "a", 261 "b", 262 "aa", 263 "ab", 264 " a", 265 "é"
std::unique_ptr<tokenizer> small_tokenizer() {
  auto tok = llama2c_tokenizer_from_bytes(
      make_vocab({{" ", -1}, {"a", -2}, {"b", -3}, {"aa", 1}, {"ab", 2}, {" a", 0.5f}, {"é", -4}}), 266);
  EXPECT_TRUE(tok.has_value()) << tok.error();
  return std::move(*tok);
}

std::unique_ptr<tokenizer> load_model_tokenizer(const std::string& name, int vocab_size) {
  const fs::path path = test::model_file(name);
  if (path.empty()) return nullptr;
  auto tok = llama2c_tokenizer_load(path, vocab_size);
  EXPECT_TRUE(tok.has_value()) << tok.error();
  return tok ? std::move(*tok) : nullptr;
}

std::vector<token_id> json_ids(simdjson::dom::element arr) {
  std::vector<token_id> ids;
  for (simdjson::dom::element v : arr.get_array()) ids.push_back(static_cast<token_id>(v.get_int64().value()));
  return ids;
}

// A literal port of run.c encode() (sorted-vocab lookups replaced by a map, O(n^2) merge loop),
// to check the priority-queue merge against.
struct run_c_reference {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::unordered_map<std::string, int> ids;

  explicit run_c_reference(std::string_view file, int vocab_size) {
    std::size_t off = 4;
    for (int i = 0; i < vocab_size; ++i) {
      float score;
      std::int32_t len;
      std::memcpy(&score, file.data() + off, 4);
      std::memcpy(&len, file.data() + off + 4, 4);
      pieces.emplace_back(file.substr(off + 8, static_cast<std::size_t>(len)));
      scores.push_back(score);
      ids.emplace(pieces.back(), i);
      off += 8 + static_cast<std::size_t>(len);
    }
  }
  int lookup(const std::string& s) const {
    const auto it = ids.find(s);
    return it == ids.end() ? -1 : it->second;
  }
  std::vector<token_id> encode(const std::string& text, bool bos) const {
    std::vector<token_id> tokens;
    if (bos) tokens.push_back(1);
    if (!text.empty()) tokens.push_back(lookup(" "));
    std::string buf;
    for (std::size_t c = 0; c < text.size(); ++c) {
      if ((text[c] & 0xC0) != 0x80) buf.clear();
      buf += text[c];
      const char next = c + 1 < text.size() ? text[c + 1] : '\0';
      if ((next & 0xC0) == 0x80 && buf.size() < 4) continue;
      if (const int id = lookup(buf); id != -1) {
        tokens.push_back(id);
      } else {
        for (const char b : buf) tokens.push_back(static_cast<unsigned char>(b) + 3);
      }
      buf.clear();
    }
    while (true) {
      float best_score = -1e10f;
      int best_id = -1, best_idx = -1;
      for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
        const int id = lookup(pieces[tokens[i]] + pieces[tokens[i + 1]]);
        if (id != -1 && scores[id] > best_score) {
          best_score = scores[id];
          best_id = id;
          best_idx = static_cast<int>(i);
        }
      }
      if (best_idx == -1) break;
      tokens[best_idx] = best_id;
      tokens.erase(tokens.begin() + best_idx + 1);
    }
    return tokens;
  }
};

// A fresh directory for corrupt files, removed at the end of the test.
class tokenizer_files : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pagedserve_tokenizer_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Writes bytes, loads them as a tokenizer file, and returns the error (failing if it loaded).
  std::string load_error(const std::string& name, std::string_view bytes, int vocab_size) {
    const fs::path path = dir_ / name;
    write_file(path, bytes);
    auto tok = llama2c_tokenizer_load(path, vocab_size);
    EXPECT_FALSE(tok.has_value()) << name << " loaded";
    if (tok) return {};
    EXPECT_NE(tok.error().find(path.string()), std::string::npos) << tok.error();
    return tok.error();
  }
  fs::path dir_;
};

// ---- encode / decode -----------------------------------------------------------------------------

TEST(tokenizer_llama2c, golden_stories260k_prompt_ids_and_decoded_text) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("tok512.bin"));
  const auto tok = load_model_tokenizer("tok512.bin", 512);
  ASSERT_NE(tok, nullptr);
  const fs::path golden = test::data_file("golden/stories260K.json");
  PAGEDSERVE_REQUIRE_DATA(golden);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.load(golden.string()).get(doc), simdjson::SUCCESS) << golden;
  int n_cases = 0;
  for (simdjson::dom::element c : doc["cases"].get_array()) {
    const std::string prompt{c["prompt"].get_string().value()};
    SCOPED_TRACE("prompt '" + prompt + "' steps " + std::to_string(c["steps"].get_int64().value()));
    const std::vector<token_id> prompt_ids = json_ids(c["prompt_ids"]);
    std::vector<token_id> generated = json_ids(c["generated_ids"]);
    EXPECT_EQ(tok->encode(prompt, true), prompt_ids);
    if (c["stopped_on_bos"].get_bool().value()) {
      ASSERT_FALSE(generated.empty());
      ASSERT_EQ(generated.back(), tok->bos_id());
      generated.pop_back();
    }
    std::vector<token_id> stream(prompt_ids.begin() + 1, prompt_ids.end());
    stream.insert(stream.end(), generated.begin(), generated.end());
    EXPECT_EQ(detokenize(*tok, stream), std::string{c["decoded_text"].get_string().value()});
    ++n_cases;
  }
  EXPECT_EQ(n_cases, 8);
}

TEST(tokenizer_llama2c, llama2_vocab_matches_sentencepiece_ids) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("tokenizer.bin"));
  const auto tok = load_model_tokenizer("tokenizer.bin", 32000);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocab_size(), 32000);
  EXPECT_EQ(tok->encode("Hello world", true), (std::vector<token_id>{1, 15043, 3186}));
  EXPECT_EQ(tok->encode("Hello world", false), (std::vector<token_id>{15043, 3186}));

  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const fs::path golden = test::tokenizer_golden("llama2");
  PAGEDSERVE_REQUIRE_DATA(golden);
  ASSERT_EQ(parser.load(golden.string()).get(doc), simdjson::SUCCESS) << golden;
  int n_checked = 0;
  for (simdjson::dom::element c : doc["tokenizers"]["llama2"]["cases"].get_array()) {
    const std::string text{c["text"].get_string().value()};
    // run.c has no special-token matching, so literal <s> / </s> encode as text.
    if (text.find("<s>") != std::string::npos) continue;
    SCOPED_TRACE("text '" + text + "'");
    simdjson::dom::element with_bos;
    const std::vector<token_id> expected = c["ids_with_special_tokens"].get(with_bos) == simdjson::SUCCESS
                                               ? json_ids(with_bos)
                                               : [&] {
                                                   auto ids = json_ids(c["ids"]);
                                                   ids.insert(ids.begin(), 1);
                                                   return ids;
                                                 }();
    const auto ids = tok->encode(text, true);
    EXPECT_EQ(ids, expected);
    EXPECT_EQ(detokenize(*tok, {ids.begin() + 1, ids.end()}), std::string{c["decoded"].get_string().value()});
    ++n_checked;
  }
  EXPECT_GE(n_checked, 25);
}

TEST(tokenizer_llama2c, llama2_vocab_roundtrips_text) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("tokenizer.bin"));
  const auto tok = load_model_tokenizer("tokenizer.bin", 32000);
  ASSERT_NE(tok, nullptr);
  const std::vector<std::string> texts = {
      "Hello world",  "café",         "Hello, 🐶 world! 👨‍👩‍👧",     "naïve résumé Ångström", "日本語のテキスト",
      "a\n\tb  c ",   "x",            "💩💩💩 and 🎉",          "Привет мир",            "1234567890 + 3.14159",
  };
  for (const auto& text : texts) {
    SCOPED_TRACE(text);
    const auto ids = tok->encode(text, true);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids.front(), tok->bos_id());
    for (const token_id id : ids) EXPECT_TRUE(id >= 0 && id < tok->vocab_size());
    EXPECT_EQ(detokenize(*tok, {ids.begin() + 1, ids.end()}), text);
  }
  // A long prompt (thousands of tokens) encodes and round-trips too.
  std::string long_text;
  for (int i = 0; i < 400; ++i) long_text += "Once upon a time, a café served 🐶 " + std::to_string(i) + ". ";
  const auto ids = tok->encode(long_text, true);
  EXPECT_GT(ids.size(), 4000u);
  EXPECT_EQ(detokenize(*tok, {ids.begin() + 1, ids.end()}), long_text);
}

TEST(tokenizer_llama2c, matches_run_c_reference_on_random_strings) {
  const std::vector<std::string> alphabet = {"a",  "b",  " ",  "e",    "é",   "🐶", "日", "\xff", "\x80", "\xC3",
                                             "th", "ing", "\n", "  ", "the", "Lily", "\xE2\x82", "\xF0\x9F", "1", ","};
  const auto run = [&](const tokenizer& tok, const run_c_reference& ref) {
    std::mt19937 rng(1234);
    for (int iter = 0; iter < 400; ++iter) {
      std::string text;
      const int n = static_cast<int>(rng() % 40);
      for (int i = 0; i < n; ++i) text += alphabet[rng() % alphabet.size()];
      const bool bos = rng() % 2 == 0;
      const auto ids = tok.encode(text, bos);
      ASSERT_EQ(ids, ref.encode(text, bos)) << "text '" << text << "'";
      // Byte fallback keeps even invalid UTF-8 recoverable from the raw pieces.
      if (bos) {
        EXPECT_EQ(decode_raw(tok, {ids.begin() + 1, ids.end()}), text);
      }
    }
  };
  {
    const std::string bytes = make_vocab({{" ", -1}, {"a", -2}, {"b", -3}, {"aa", 1}, {"ab", 2}, {" a", 0.5f}});
    const auto tok = llama2c_tokenizer_from_bytes(bytes, 265);
    ASSERT_TRUE(tok.has_value()) << tok.error();
    run(**tok, run_c_reference(bytes, 265));
  }
  for (const auto& [name, n] : {std::pair<std::string, int>{"tok512.bin", 512}, {"tokenizer.bin", 32000}}) {
    const fs::path path = test::model_file(name);
    if (path.empty()) continue;
    SCOPED_TRACE(name);
    const auto tok = llama2c_tokenizer_load(path, n);
    ASSERT_TRUE(tok.has_value()) << tok.error();
    run(**tok, run_c_reference(read_file(path), n));
  }
}

TEST(tokenizer_llama2c, merges_highest_score_leftmost_first) {
  const auto tok = small_tokenizer();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode("", true), (std::vector<token_id>{1}));
  EXPECT_EQ(tok->encode("", false), (std::vector<token_id>{}));
  // " a a b": "ab" (2) beats "aa" (1) beats " a" (0.5).
  EXPECT_EQ(tok->encode("aab", true), (std::vector<token_id>{1, 264, 263}));
  // Equal scores: the leftmost "aa" merges first (rightmost first would give " a" + "aa").
  EXPECT_EQ(tok->encode("aaa", false), (std::vector<token_id>{259, 262, 260}));
  EXPECT_EQ(tok->encode("aaaa", false), (std::vector<token_id>{259, 262, 262}));
  // "é" is a piece; "ü" and invalid bytes fall back to byte tokens.
  EXPECT_EQ(tok->encode("é", false), (std::vector<token_id>{259, 265}));
  EXPECT_EQ(tok->encode("ü", false), (std::vector<token_id>{259, 0xC3 + 3, 0xBC + 3}));
  EXPECT_EQ(tok->encode("\xFF\x80", false), (std::vector<token_id>{259, 0xFF + 3, 0x80 + 3}));
  EXPECT_EQ(tok->encode(std::string_view("\0", 1), false), (std::vector<token_id>{259, 3}));
}

TEST(tokenizer_llama2c, decode_piece_rules) {
  const auto tok = small_tokenizer();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->decode_piece(1, 264), "a");  // leading space dropped after BOS
  EXPECT_EQ(tok->decode_piece(260, 264), " a");
  EXPECT_EQ(tok->decode_piece(1, 259), "");
  EXPECT_EQ(tok->decode_piece(260, 0x41 + 3), "A");  // <0x41>
  EXPECT_EQ(tok->decode_piece(260, 0xF0 + 3), "\xF0");
  EXPECT_EQ(tok->decode_piece(260, 3), std::string(1, '\0'));
  EXPECT_EQ(tok->decode_piece(260, 0), "<unk>");
  for (const token_id bad : {-1, -1000, 266, 1 << 30}) EXPECT_EQ(tok->decode_piece(1, bad), "") << bad;
}

// ---- corrupt files -------------------------------------------------------------------------------

TEST_F(tokenizer_files, corrupt_files_give_errors) {
  const std::string good = make_vocab({{" ", -1}, {"a", -2}, {"b", -3}, {"ab", 2}});
  const int n = 263;
  ASSERT_TRUE(llama2c_tokenizer_from_bytes(good, n).has_value());
  {
    const fs::path path = dir_ / "good.bin";
    write_file(path, good);
    auto tok = llama2c_tokenizer_load(path, n);
    ASSERT_TRUE(tok.has_value()) << tok.error();
    EXPECT_EQ((*tok)->encode("ab", true), (std::vector<token_id>{1, 259, 262}));
  }
  EXPECT_NE(load_error("empty.bin", "", n).find("empty"), std::string::npos);
  EXPECT_NE(load_error("short.bin", good.substr(0, 3), n).find("truncated"), std::string::npos);
  EXPECT_NE(load_error("half.bin", good.substr(0, good.size() / 2), n).find("truncated"), std::string::npos);
  EXPECT_NE(load_error("minus1.bin", good.substr(0, good.size() - 1), n).find("truncated"), std::string::npos);
  EXPECT_NE(load_error("few.bin", good, n + 1).find("expected 264 tokens"), std::string::npos);

  std::string bad = good;
  const std::int32_t negative = -5;
  std::memcpy(bad.data() + 8, &negative, 4);  // length of token 0
  EXPECT_NE(load_error("negative.bin", bad, n).find("negative length"), std::string::npos);

  bad = good;
  const std::int32_t huge = 0x7fffffff;
  std::memcpy(bad.data() + 8, &huge, 4);
  EXPECT_NE(load_error("huge.bin", bad, n).find("max_token_length"), std::string::npos);
  std::memcpy(bad.data(), &huge, 4);  // the header agrees, the file is just too short
  EXPECT_NE(load_error("huge2.bin", bad, n).find("truncated"), std::string::npos);
  std::memcpy(bad.data(), &negative, 4);
  EXPECT_NE(load_error("negative_max.bin", bad, n).find("max_token_length"), std::string::npos);

  EXPECT_FALSE(load_error("vocab0.bin", good, 0).empty());
  EXPECT_FALSE(load_error("vocab_negative.bin", good, -7).empty());

  const fs::path missing = dir_ / "missing.bin";
  auto tok = llama2c_tokenizer_load(missing, n);
  ASSERT_FALSE(tok.has_value());
  EXPECT_NE(tok.error().find(missing.string()), std::string::npos) << tok.error();
  tok = llama2c_tokenizer_load(dir_, n);
  ASSERT_FALSE(tok.has_value());
  EXPECT_NE(tok.error().find(dir_.string()), std::string::npos) << tok.error();
}

TEST(tokenizer_llama2c, every_truncation_and_random_bytes_are_handled) {
  const std::string good = make_vocab({{" ", -1}, {"ab", 2}, {"é", 1}});
  for (std::size_t len = 0; len < good.size(); ++len) {
    auto tok = llama2c_tokenizer_from_bytes(good.substr(0, len), 262);
    ASSERT_FALSE(tok.has_value()) << "prefix of " << len << " bytes loaded";
    EXPECT_FALSE(tok.error().empty());
  }
  // Random garbage either loads or fails, and a loaded tokenizer never crashes.
  std::mt19937 rng(7);
  for (int iter = 0; iter < 300; ++iter) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? rng() % 256 : rng() % 3);
    auto tok = llama2c_tokenizer_from_bytes(bytes, 3 + static_cast<int>(rng() % 3));
    if (!tok) continue;
    const auto ids = (*tok)->encode("a\xC3\xA9\xFF z", true);
    for (const token_id id : ids) EXPECT_TRUE(id >= 0 && id < (*tok)->vocab_size());
    detokenize(**tok, ids);
  }
}

// ---- incremental detokenizer ---------------------------------------------------------------------

std::vector<token_id> byte_tokens(std::string_view bytes) {
  std::vector<token_id> ids;
  for (const char c : bytes) ids.push_back(static_cast<unsigned char>(c) + 3);
  return ids;
}

TEST(tokenizer_detokenizer, never_splits_a_utf8_character) {
  const auto tok = small_tokenizer();
  ASSERT_NE(tok, nullptr);
  const std::string text = "🐶é";
  incremental_detokenizer detok(*tok, 1);
  std::vector<std::string> chunks;
  for (const token_id id : byte_tokens(text)) chunks.push_back(detok.push(id));
  chunks.push_back(detok.flush());
  const std::vector<std::string> expected = {"", "", "", "🐶", "", "é", ""};
  EXPECT_EQ(chunks, expected);
  std::string joined;
  for (const auto& c : chunks) {
    EXPECT_TRUE(valid_utf8(c));
    joined += c;
  }
  EXPECT_EQ(joined, text);
  // Mixed with whole pieces, and the leading-space rule following the previous token.
  EXPECT_EQ(detokenize(*tok, {264, 0xC3 + 3, 0xA9 + 3, 264, 265}), "aé aé");
  EXPECT_EQ(detokenize(*tok, {264}, 260), " a");
}

TEST(tokenizer_detokenizer, invalid_bytes_become_replacement_chars) {
  const auto tok = small_tokenizer();
  ASSERT_NE(tok, nullptr);
  const std::string r = "\xEF\xBF\xBD";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\x80", r},                                // continuation without lead
      {"a\xC3(b", "a" + r + "(b"},                // lead not followed by a continuation
      {"\xE2\x82", r},                            // unfinished at the end: flush
      {"\xE2\x82x", r + "x"},                     // unfinished, then ASCII
      {"\xC0\xAF", r + r},                        // overlong '/'
      {"\xE0\x80\xAF", r + r + r},                // overlong 3-byte
      {"\xED\xA0\x80", r + r + r},                // surrogate
      {"\xF4\x90\x80\x80", r + r + r + r},        // above U+10FFFF
      {"\xFF\xFEok", r + r + "ok"},               // never valid bytes
      {"\xF0\x9F\x90\xB6\xF0\x9F", "🐶" + r},     // good character, then a truncated one
      {"\xF0\x9F\xC3\xA9", r + "é"},              // truncated character interrupted by a new one
  };
  for (const auto& [bytes, expected] : cases) {
    const std::string out = detokenize(*tok, byte_tokens(bytes));
    EXPECT_EQ(out, expected) << "bytes of length " << bytes.size();
    EXPECT_TRUE(valid_utf8(out));
  }
  // flush empties the held bytes: the next push starts fresh.
  incremental_detokenizer detok(*tok, 1);
  EXPECT_EQ(detok.push(0xE2 + 3), "");
  EXPECT_EQ(detok.flush(), r);
  EXPECT_EQ(detok.flush(), "");
  EXPECT_EQ(detok.push(0x41 + 3), "A");
  EXPECT_EQ(detok.push(-5), "");  // out-of-range id: nothing, no crash
}

}  // namespace
}  // namespace pagedserve
