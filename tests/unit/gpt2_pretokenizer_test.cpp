// GPT-2's pre-tokenizer (tokenizer.json's ByteLevel with use_regex, and GGUF's pre "gpt-2", which maps
// to it): the words it cuts text into, against the splits of GPT-2's published pattern
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ worked out by hand
// (contractions, a space kept on the next word, whitespace runs leaving their last space to the word
// after them, newlines, Unicode letters and digits).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

#include "src/tokenizer/hf_tokenizer_internal.hpp"

namespace pagedserve {
namespace {

std::vector<std::string> gpt2_words(const std::string& text) {
  simdjson::dom::parser parser;
  const simdjson::dom::element e =
      parser.parse(std::string_view(R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":true})")).value();
  auto pre = hf::pre_tokenizer::from_json(e);
  EXPECT_TRUE(pre.has_value()) << pre.error();
  std::vector<std::string> words;
  if (pre) pre->split(text, true, words);
  return words;
}

TEST(gpt2_pretokenizer, splits_as_gpt2s_pattern) {
  using words = std::vector<std::string>;
  EXPECT_EQ(gpt2_words("Hello world's 123  cats!\n\nok"),
            (words{"Hello", " world", "'s", " 123", " ", " cats", "!", "\n", "\n", "ok"}));
  EXPECT_EQ(gpt2_words("it'll   be\tdone 2024?"), (words{"it", "'ll", "  ", " be", "\t", "done", " 2024", "?"}));
  EXPECT_EQ(gpt2_words("  leading and trailing  "), (words{" ", " leading", " and", " trailing", "  "}));
  // Case-sensitive contractions (unlike Llama 3's (?i:...)): "'S" is punctuation plus a letter.
  EXPECT_EQ(gpt2_words("IT'S they've"), (words{"IT", "'", "S", " they", "'ve"}));
  // \p{L} and \p{N} are Unicode classes: accented and CJK letters stay in words, Arabic-Indic digits are digits.
  EXPECT_EQ(gpt2_words("caf\xc3\xa9 na\xc3\xafve \xe6\x9d\xb1\xe4\xba\xac \xd9\xa1\xd9\xa2..."),
            (words{"caf\xc3\xa9", " na\xc3\xafve", " \xe6\x9d\xb1\xe4\xba\xac", " \xd9\xa1\xd9\xa2", "..."}));
  // Letters and digits are never joined (no \p{N} inside \p{L}+), unlike a \w-based split.
  EXPECT_EQ(gpt2_words("abc123def"), (words{"abc", "123", "def"}));
}

}  // namespace
}  // namespace pagedserve
