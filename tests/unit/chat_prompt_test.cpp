// chat_prompt_encode under both --special-tokens-in-content modes, with a hand-written tokenizer
// (one id per character, special token [E], non-special added token [T]): "parse" makes a typed [E]
// its control id, as Hugging Face does; "text" spells it out wherever the template puts the content,
// while the template's own [E] and the non-special [T] stay single tokens.
#include "chat/chat_prompt.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tokenizer/hf_tokenizer.hpp"

namespace pagedserve {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<tokenizer> bracket_tokenizer() {
  const fs::path p = fs::temp_directory_path() / ("pagedserve_chat_prompt_" + std::to_string(::getpid()) + ".json");
  std::ofstream(p) << R"({"added_tokens":[{"id":6,"content":"[E]","special":true,"normalized":false},
                                          {"id":7,"content":"[T]","special":false,"normalized":false}],
    "model":{"type":"BPE","unk_token":"<unk>","merges":[],
             "vocab":{"<unk>":0,"a":1,"b":2," ":3,"x":4,"y":5,"[":8,"E":9,"]":10,"T":11}}})";
  auto t = hf_tokenizer_load(p);
  fs::remove(p);
  EXPECT_TRUE(t.has_value()) << t.error();
  return t ? std::move(*t) : nullptr;
}

chat_template_context conversation(std::vector<std::string> contents) {
  chat_template_context ctx;
  for (auto& c : contents) ctx.messages.push_back(chat_value::object{{"role", "user"}, {"content", std::move(c)}});
  return ctx;
}

std::vector<token_id> encode(std::string_view tpl_source, std::vector<std::string> contents, special_tokens_in_content mode,
                             const tokenizer& tok) {
  auto tpl = chat_template::parse(tpl_source);
  EXPECT_TRUE(tpl.has_value()) << tpl.error();
  auto ids = chat_prompt_encode(*tpl, conversation(std::move(contents)), tok, mode);
  EXPECT_TRUE(ids.has_value()) << ids.error();
  return ids.value_or(std::vector<token_id>{});
}

using ids = std::vector<token_id>;
constexpr auto parse = special_tokens_in_content::parse;
constexpr auto text = special_tokens_in_content::text;

TEST(chat_prompt, typed_special_tokens_are_control_tokens_under_parse_and_text_under_text) {
  const auto tok = bracket_tokenizer();
  ASSERT_TRUE(tok);
  const std::string turns = "{% for m in messages %}[E]{{ m.content }}{% endfor %}";
  EXPECT_EQ(encode(turns, {"a[E]b[T]"}, parse, *tok), (ids{6, 1, 6, 2, 7}));
  EXPECT_EQ(encode(turns, {"a[E]b[T]"}, text, *tok), (ids{6, 1, 8, 9, 10, 2, 7}));
  EXPECT_EQ(encode(turns, {"[E][E]", "x"}, text, *tok), (ids{6, 8, 9, 10, 8, 9, 10, 6, 4}));
  // Contents without special-token text encode the same under both modes.
  EXPECT_EQ(encode(turns, {"ab", "xy"}, text, *tok), encode(turns, {"ab", "xy"}, parse, *tok));
}

TEST(chat_prompt, text_follows_the_content_wherever_the_template_moves_it) {
  const auto tok = bracket_tokenizer();
  ASSERT_TRUE(tok);
  // Repeated, trimmed and joined with template text: every copy of the typed token stays text.
  EXPECT_EQ(encode("{{ messages[0].content ~ '[E]' ~ messages[0].content }}", {"[E]"}, text, *tok),
            (ids{8, 9, 10, 6, 8, 9, 10}));
  EXPECT_EQ(encode("{{ messages[0].content|trim }}[E]", {"  a[E]  "}, text, *tok), (ids{1, 8, 9, 10, 6}));
}

TEST(chat_prompt, mode_names) {
  EXPECT_EQ(special_tokens_in_content_from("parse"), parse);
  EXPECT_EQ(special_tokens_in_content_from("text"), text);
  EXPECT_FALSE(special_tokens_in_content_from("escape").has_value());
}

TEST(chat_prompt, literal_ranges_only_cover_special_tokens_they_overlap) {
  const auto tok = bracket_tokenizer();
  ASSERT_TRUE(tok);
  const std::vector<text_range> first{{0, 3}};
  EXPECT_EQ(tok->encode_with_literal_ranges("[E]a[E]", false, first), (ids{8, 9, 10, 1, 6}));
  const std::vector<text_range> partial{{2, 4}};  // overlaps the first token's last byte
  EXPECT_EQ(tok->encode_with_literal_ranges("[E]a[E]", false, partial), (ids{8, 9, 10, 1, 6}));
  EXPECT_EQ(tok->encode_with_literal_ranges("[T]", false, std::vector<text_range>{{0, 3}}), (ids{7}));
  EXPECT_EQ(tok->find_special_tokens("a[E][T][E"), (std::vector<text_range>{{1, 4}}));
}

}  // namespace
}  // namespace pagedserve
