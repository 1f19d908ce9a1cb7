// Token masks over real vocabularies, byte-level BPE (Qwen3) and SentencePiece with byte fallback
// (tok512): along a valid output every token of it is allowed, the mask agrees with advancing the
// grammar token by token, and end-of-sequence is allowed exactly when the output is complete.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "grammar/grammar_constraint.hpp"
#include "support/test_paths.hpp"
#include "tokenizer/hf_tokenizer.hpp"
#include "tokenizer/tokenizer.hpp"
#include "unit/grammar_test_helpers.hpp"

namespace pagedserve::grammar {
namespace {

using kind = output_format::kind;

std::shared_ptr<const token_vocabulary> vocabulary_of(const tokenizer& tok) {
  return std::make_shared<const token_vocabulary>(token_vocabulary_from(tok, {tok.eos_id()}));
}

// Is `bytes` a continuation of the matcher's state? (One token, checked directly.)
bool continues(grammar_matcher& m, std::string_view bytes) {
  grammar_matcher::state s = m.current(), next;
  for (char c : bytes) {
    m.advance(s, static_cast<unsigned char>(c), next);
    if (next.empty()) return false;
    s.swap(next);
  }
  return true;
}

// Walks `text` with the longest vocabulary tokens, checking the mask at every step against a
// direct check of every `stride`-th token and of the tokens that start with the next byte.
void walk(const std::shared_ptr<const grammar>& g, const std::shared_ptr<const token_vocabulary>& vocab,
          std::string_view text, int stride) {
  grammar_constraint constraint(g, vocab);
  grammar_matcher reference(g);
  const token_id eos = vocab->end_ids().front();
  std::size_t at = 0;
  while (at < text.size()) {
    const std::string_view rest = text.substr(at);
    token_id best = -1;
    for (token_id t = 0; t < vocab->size(); ++t) {
      const std::string& b = vocab->bytes(t);
      if (!b.empty() && rest.starts_with(b) && (best < 0 || b.size() > vocab->bytes(best).size())) best = t;
      const bool checked = t % stride == 0 || (!b.empty() && b[0] == rest[0]);
      if (checked && !b.empty()) ASSERT_EQ(constraint.is_allowed(t), continues(reference, b)) << "token " << t << " at " << at;
    }
    ASSERT_GE(best, 0) << "no token for byte " << at;
    ASSERT_TRUE(constraint.is_allowed(best)) << "token " << best << " '" << vocab->bytes(best) << "' at byte " << at;
    ASSERT_EQ(constraint.is_allowed(eos), reference.can_end()) << "at byte " << at;
    constraint.accept(best);
    ASSERT_TRUE(reference.accept(vocab->bytes(best)));
    at += vocab->bytes(best).size();
  }
  EXPECT_TRUE(constraint.is_allowed(eos));
  if (reference.must_end()) {
    const auto& bits = constraint.allowed();
    int n_allowed = 0;
    for (std::uint64_t w : bits) n_allowed += std::popcount(w);
    EXPECT_EQ(n_allowed, 1);  // only the end token once nothing can follow
  }
}

void check_vocabulary(const tokenizer& tok, int stride) {
  auto vocab = vocabulary_of(tok);
  auto object = grammar_test::compiled(kind::json_schema, R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},
    "n":{"type":"integer","minimum":0,"maximum":500},"tags":{"type":"array","items":{"enum":["a","é€"]},"maxItems":3}},
    "required":["name","n"],"additionalProperties":false})");
  walk(object, vocab, R"({"name": "héllo wörld", "n": 42, "tags": ["é€", "a"]})", stride);
  walk(grammar_test::compiled(kind::regex, R"([A-Z][a-z]+ \d{1,3})"), vocab, "Hello 123", stride);
  walk(grammar_test::compiled(kind::json_object, ""), vocab, "{\"a\": [1, 2.5e3, null, true], \"b\": {\"c\": \"\\n\"}}", stride);
}

TEST(grammar_constraint, sentencepiece_with_byte_fallback) {
  const auto path = test::model_file("tok512.bin");
  PAGEDSERVE_REQUIRE_DATA(path);
  auto tok = llama2c_tokenizer_load(path, 512);
  ASSERT_TRUE(tok) << tok.error();
  check_vocabulary(**tok, 1);
}

TEST(grammar_constraint, byte_level_bpe_with_added_tokens) {
  const auto dir = test::tokenizer_dir("qwen3");
  PAGEDSERVE_REQUIRE_DATA(dir);
  auto tok = hf_tokenizer_load(dir);
  ASSERT_TRUE(tok) << tok.error();
  check_vocabulary(**tok, 257);
  // A forced tool call: added non-control tokens such as <tool_call> count by their text.
  auto vocab = vocabulary_of(**tok);
  auto g = compile_output_format({kind::json_schema, R"({"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false})",
                                  "<tool_call>\n", "\n</tool_call>"});
  ASSERT_TRUE(g) << g.error();
  grammar_constraint c(*g, vocab);
  const auto tool_call = (*tok)->token_to_id("<tool_call>");
  ASSERT_TRUE(tool_call);
  EXPECT_TRUE(c.is_allowed(*tool_call));
  EXPECT_FALSE(c.is_allowed((*tok)->eos_id()));
  walk(*g, vocab, "<tool_call>\n{\"x\": 7}\n</tool_call>", 257);
}

TEST(grammar_constraint, masks_logits_to_minus_infinity) {
  const auto path = test::model_file("tok512.bin");
  PAGEDSERVE_REQUIRE_DATA(path);
  auto tok = llama2c_tokenizer_load(path, 512);
  ASSERT_TRUE(tok);
  grammar_constraint c(grammar_test::compiled(kind::regex, "yes|no"), vocabulary_of(**tok));
  std::vector<float> logits(520, 1.0f);  // the model's rows may be wider than the vocabulary
  c.mask(logits.data(), static_cast<int>(logits.size()));
  for (token_id t = 0; t < 520; ++t) {
    const bool allowed = t < 512 && c.is_allowed(t);
    EXPECT_EQ(std::isinf(logits[t]), !allowed) << t;
  }
}

}  // namespace
}  // namespace pagedserve::grammar
