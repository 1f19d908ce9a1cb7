// The added-token search (a byte trie since issue 17): on random text over a small alphabet and many
// overlapping tokens it finds exactly the leftmost-longest, non-overlapping matches a brute-force
// scan finds; and the Llama 3 tokenizer (256 tokens starting "<|") round-trips hostile text made of
// '<' and "<|" prefixes, which the old per-first-byte candidate lists scanned ~256 tokens per byte for.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "tokenizer/hf_tokenizer.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

namespace fs = std::filesystem;

// Leftmost, then longest, non-overlapping: the ranges of the tokens found.
std::vector<text_range> brute_force(std::string_view text, const std::vector<std::string>& tokens) {
  std::vector<text_range> out;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t best = 0;
    for (const std::string& t : tokens)
      if (t.size() > best && text.substr(pos).starts_with(t)) best = t.size();
    if (best == 0) {
      ++pos;
      continue;
    }
    out.push_back({pos, pos + best});
    pos += best;
  }
  return out;
}

TEST(hf_added_tokens, trie_matches_brute_force_leftmost_longest) {
  const std::vector<std::string> tokens = {"<", "<|", "<|a", "<|ab|>", "|>", "a|", "<<", "<|a|>", "b<|", "<|ab"};
  std::string json = R"({"added_tokens":[)";
  for (std::size_t i = 0; i < tokens.size(); ++i)
    json += (i ? "," : "") + std::string(R"({"id":)") + std::to_string(10 + i) + R"(,"content":")" + tokens[i] +
            R"(","special":true,"normalized":false})";
  json += R"(],"model":{"type":"BPE","unk_token":"<unk>","merges":[],"vocab":{"<unk>":0,"a":1,"b":2,"|":3,">":4}}})";
  const fs::path p = fs::temp_directory_path() / ("pagedserve_added_" + std::to_string(::getpid()) + ".json");
  std::ofstream(p) << json;
  auto tok = hf_tokenizer_load(p);
  fs::remove(p);
  ASSERT_TRUE(tok) << tok.error();
  std::mt19937 rng(17);
  const std::string alphabet = "<|ab>";
  for (int round = 0; round < 2000; ++round) {
    std::string text(rng() % 40, ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    const auto want = brute_force(text, tokens);
    ASSERT_EQ((*tok)->find_special_tokens(text), want) << text;
    // encode() splits at the same places: one id per match, one per other character.
    std::size_t n_matched_bytes = 0;
    for (const auto& r : want) n_matched_bytes += r.end - r.begin;
    ASSERT_EQ((*tok)->encode(text, false).size(), text.size() - n_matched_bytes + want.size()) << text;
  }
}

TEST(hf_added_tokens, llama3_round_trips_hostile_text) {
  const fs::path dir = test::tokenizer_dir("llama3");
  PAGEDSERVE_REQUIRE_DATA(dir);
  auto tok = hf_tokenizer_load(dir);
  ASSERT_TRUE(tok) << tok.error();
  for (const std::string unit : {"<", "<|", "<|reserved_special_token_", "<|eot_id|"}) {
    std::string text;
    while (text.size() < (64u << 10)) text += unit;
    const std::vector<token_id> ids = (*tok)->encode(text, false);
    EXPECT_EQ((*tok)->decode(ids, false), text) << unit;
  }
  // Whole special tokens are still found among the prefixes.
  const auto ids = (*tok)->encode("<|<|eot_id|><<|begin_of_text|>", false);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), *(*tok)->token_to_id("<|eot_id|>")), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), *(*tok)->token_to_id("<|begin_of_text|>")), 1);
}

}  // namespace
}  // namespace pagedserve
