// --special-tokens-in-content over a real socket: with the GGUF stories tokenizer (control tokens
// "\n<s>\n" = 1 and "\n</s>\n" = 2, as tok512.bin spells them), a chat message that types them gets each as one control token
// each under "parse" (Hugging Face's default) and spelled out as text under "text", so the two modes
// report different usage.prompt_tokens; a message without them counts the same under both.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <iostream>

#include "support/openai_http_client.hpp"
#include "api/ws_protocol.hpp"  // json_append_string
#include "support/server_process.hpp"
#include "e2e/stories_gguf.hpp"

namespace pagedserve::e2e {
namespace {

// usage.prompt_tokens of a greedy 2-token chat completion of one user message, or -1.
std::int64_t chat_prompt_tokens(unsigned short port, const std::string& content) {
  std::string body = R"({"messages":[{"role":"user","content":)";
  json_append_string(body, content);
  body += R"(}],"max_tokens":2,"temperature":0})";
  http_conn c;
  if (!c.connect(port) || !c.send(http_post_bytes("/v1/chat/completions", body))) return -1;
  auto r = c.read_response(std::chrono::seconds(30));
  if (!r || r->status != 200) {
    ADD_FAILURE() << (r ? r->body : r.error());
    return -1;
  }
  simdjson::dom::parser parser;
  std::int64_t n = -1;
  if (parser.parse(r->body)["usage"]["prompt_tokens"].get(n) != simdjson::SUCCESS) ADD_FAILURE() << r->body;
  return n;
}

TEST(special_tokens_in_content, parse_and_text_tokenize_typed_control_tokens_differently) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  const auto gguf = write_stories_gguf();
  const std::string typed = "Lily\n</s>\nmet\n<s>\na cat", plain = "Lily met a cat";
  std::int64_t parse_typed = 0, parse_plain = 0, text_typed = 0, text_plain = 0;
  {
    server_process parse({"--model", gguf.string(), "--tokenizer", ""});
    ASSERT_TRUE(parse.ready()) << parse.error();
    parse_typed = chat_prompt_tokens(parse.port(), typed);
    parse_plain = chat_prompt_tokens(parse.port(), plain);
  }
  {
    server_process text({"--model", gguf.string(), "--tokenizer", "", "--special-tokens-in-content", "text"});
    ASSERT_TRUE(text.ready()) << text.error();
    text_typed = chat_prompt_tokens(text.port(), typed);
    text_plain = chat_prompt_tokens(text.port(), plain);
  }
  std::cout << "prompt tokens of a message typing </s> and <s>: parse " << parse_typed << ", text " << text_typed << "\n";
  ASSERT_GT(parse_typed, 0);
  EXPECT_EQ(parse_plain, text_plain);  // nothing to tell apart without control-token text
  // "\n</s>\n" and "\n<s>\n" as text take several pieces each where parse makes each one token.
  EXPECT_GE(text_typed, parse_typed + 4);

  // A mode that is neither is refused at start-up, naming the key.
  const auto bad = run_process({test::server_binary().string(), "serve", "--model", gguf.string(), "--tokenizer", "",
                                "--special-tokens-in-content", "escape", "--port", "0"},
                               std::chrono::seconds(30));
  EXPECT_FALSE(bad.exited && bad.exit_code == 0);
  EXPECT_NE(bad.err.find("special_tokens_in_content"), std::string::npos) << bad.err << bad.out;
  std::filesystem::remove(gguf);
}

}  // namespace
}  // namespace pagedserve::e2e
