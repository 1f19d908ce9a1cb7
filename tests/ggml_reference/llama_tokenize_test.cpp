// pagedserve's byte-level BPE against llama.cpp's tokenizer (libllama's llama_tokenize) on the same GGUF
// vocabulary, for every tokenizer.ggml.pre name both read. The vocabulary is synthetic but real BPE: the
// 256 byte symbols, then a merge for every pair of ASCII symbols and of an ASCII letter or space with a
// byte of a multi-byte character, so wherever a pre-tokenizer puts a boundary the tokens show it: the
// same ids from both mean the same splits of letters, case changes, digits, punctuation, whitespace,
// newlines, accents and CJK text. And a SentencePiece vocabulary, tok512's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "e2e/stories_gguf.hpp"
#include "llama_library.hpp"
#include "model/gguf_random_model.hpp"
#include "model/gguf_recipe.hpp"
#include "model/gguf_writer.hpp"
#include "model/gguf.hpp"
#include "model/gguf_model.hpp"

namespace pagedserve {
namespace {

// GPT-2's byte-to-symbol map: printable bytes stand for themselves, the others for U+0100 onwards.
std::vector<std::string> byte_symbols() {
  std::vector<std::string> out(256);
  int next = 256;
  const auto utf8 = [](int cp) {
    std::string s;
    if (cp < 0x80) return std::string(1, static_cast<char>(cp));
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
    return s;
  };
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    out[b] = utf8(printable ? b : next++);
  }
  return out;
}

// Writes a tiny llama whose vocabulary is byte-level BPE named `pre`.
std::filesystem::path write_vocab(const std::string& pre) {
  const std::vector<std::string> bytes = byte_symbols();
  std::vector<std::string> tokens = bytes, merges;
  std::vector<int> ascii;  // space, newline and the printable ASCII bytes
  ascii.push_back(' '), ascii.push_back('\n');
  for (int b = 33; b < 127; ++b) ascii.push_back(b);
  for (const int a : ascii)
    for (const int b : ascii) merges.push_back(bytes[a] + " " + bytes[b]);
  for (int a = 'A'; a <= 'z'; ++a)
    for (int b = 0x80; b < 0x100; ++b) merges.push_back(bytes[a] + " " + bytes[b]);
  for (int b = 0x80; b < 0x100; ++b) merges.push_back(bytes[' '] + " " + bytes[b]);
  for (const std::string& m : merges) tokens.push_back(m.substr(0, m.find(' ')) + m.substr(m.find(' ') + 1));
  tokens.push_back("<s>");
  tokens.push_back("</s>");
  std::vector<std::int32_t> types(tokens.size(), 1);
  types[types.size() - 2] = types.back() = 3;

  model_config c;
  c.architecture = "llama";
  c.dim = 64, c.hidden_dim = 64, c.n_layers = 1, c.n_heads = 2, c.n_kv_heads = 2, c.seq_len = 64;
  c.vocab_size = static_cast<int>(tokens.size());
  gguf_writer w;
  gguf_add_random_model(w, c, *gguf_recipe_parse("F32"), 3);
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", pre);
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_strings("tokenizer.ggml.merges", merges);
  w.add_i32s("tokenizer.ggml.token_type", types);
  const auto path = test::temp_file("bpe_" + pre + ".gguf");
  EXPECT_TRUE(w.write(path).has_value());
  return path;
}

// Greek with U+1F7D, the Kelvin and Ohm signs (canonical equivalents of other letters), fullwidth ASCII.
const std::string greek = "\xce\xa9\xce\xbc\xce\xad\xce\xb3\xce\xb1 \xe1\xbd\xbd \xe2\x84\xaa\xe2\x84\xa6 \xef\xbc\xa1\xef\xbc\xa2\xef\xbc\x81";
const std::vector<std::string> texts = {
    "Hello world",
    "  two  spaces,\tand a tab",
    "line one\nline two\r\n\n\nend",
    "CamelCaseWords and XMLHttpRequest",
    "digits 1 12 123 1234 12345 3.14159",
    "punctuation!!! (brackets) [x] {y} <z> \"quoted\" 'single'",
    "it's they're we've I'm you'll he'd DON'T",
    "caf\xc3\xa9 na\xc3\xafve \xc3\x89cole \xc3\xbc\xc3\x9f",
    "\xe4\xb8\xad\xe6\x96\x87\xe5\xad\x97 and \xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 mixed",
    "path/to/file.txt  https://example.com/a?b=1",
    "trailing spaces   ",
    "   leading spaces",
    "a",
    "",
    greek,
};
// The same text in Unicode's composed form (NFC), which Qwen's tokenizer.json normalises to first and
// llama.cpp does not: for qwen2 that form is what llama.cpp is asked to split.
const std::string greek_nfc = "\xce\xa9\xce\xbc\xce\xad\xce\xb3\xce\xb1 \xcf\x8e K\xce\xa9 \xef\xbc\xa1\xef\xbc\xa2\xef\xbc\x81";

// Our tokens of each of `texts` from the GGUF file's vocabulary equal llama.cpp's of `asked` (the same
// texts, but for a form llama.cpp must be given instead).
void expect_llama_cpps_tokens(const test::llama_library& llama, const std::filesystem::path& path,
                              const std::vector<std::string>& asked) {
  const auto theirs = llama.tokenize(path, asked);
  ASSERT_EQ(theirs.size(), texts.size()) << "llama.cpp could not load " << path;
  auto file = gguf_file::open(path);
  ASSERT_TRUE(file.has_value()) << file.error();
  auto ours = gguf_tokenizer_from(*file);
  ASSERT_TRUE(ours.has_value()) << ours.error();
  for (std::size_t i = 0; i < texts.size(); ++i) {
    SCOPED_TRACE("text: " + texts[i]);
    EXPECT_EQ((*ours)->encode(texts[i], false), theirs[i]);
  }
}

class llama_cpp_tokenize : public testing::TestWithParam<std::string> {};

TEST_P(llama_cpp_tokenize, gives_llama_cpps_tokens) {
  const test::llama_library llama;
  if (!llama.ok()) GTEST_SKIP() << llama.why();
  const auto path = write_vocab(GetParam());
  std::vector<std::string> asked = texts;
  if (GetParam() == "qwen2") asked.back() = greek_nfc;
  expect_llama_cpps_tokens(llama, path, asked);
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(all, llama_cpp_tokenize,
                         testing::Values("qwen2", "deepseek-r1-qwen", "llama-bpe", "smaug-bpe", "tekken", "smollm",
                                         "deepseek-coder", "deepseek-llm", "gpt-2"),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name;
                         });

// A name neither reads is refused, rather than split some other way.
TEST(gguf_tokenizer_pre, an_unknown_name_is_refused) {
  const auto path = write_vocab("some-new-model");
  auto file = gguf_file::open(path);
  ASSERT_TRUE(file.has_value()) << file.error();
  auto ours = gguf_tokenizer_from(*file);
  ASSERT_FALSE(ours.has_value());
  EXPECT_NE(ours.error().find("tokenizer.ggml.pre 'some-new-model' is not supported"), std::string::npos) << ours.error();
  std::filesystem::remove(path);
}

// A SentencePiece ("llama") vocabulary, stories260K's tok512 (scores, byte fallback) as the llama2.c
// model's GGUF carries it: the same tokens as llama.cpp's own SentencePiece tokenizer.
TEST(llama_cpp_tokenize_spm, gives_llama_cpps_tokens) {
  const test::llama_library llama;
  if (!llama.ok()) GTEST_SKIP() << llama.why();
  PAGEDSERVE_REQUIRE_DATA(e2e::model_path());
  const auto path = e2e::write_stories_gguf();
  expect_llama_cpps_tokens(llama, path, texts);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pagedserve
