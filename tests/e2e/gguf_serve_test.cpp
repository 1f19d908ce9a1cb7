// A GGUF file is all `serve` needs: stories260K and its tok512 vocabulary written as one GGUF
// (llama arch, F32, SentencePiece tokenizer with scores, a chat template) answers over HTTP like the
// llama2.c checkpoint + tokenizer.bin pair, and `tokenize` reads the same file.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstring>
#include <fstream>
#include <regex>

#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"
#include "e2e/stories_gguf.hpp"

namespace pagedserve::e2e {
namespace {

raw_response post(unsigned short port, const std::string& path, const std::string& body) {
  http_conn c;
  EXPECT_TRUE(c.connect(port));
  EXPECT_TRUE(c.send(http_post_bytes(path, body)));
  auto r = c.read_response(std::chrono::seconds(30));
  EXPECT_TRUE(r) << r.error();
  return r ? *r : raw_response{};
}

std::string completion_text(const raw_response& r) {
  simdjson::dom::parser parser;
  std::string_view text;
  if (parser.parse(r.body)["choices"].at(0)["text"].get(text) != simdjson::SUCCESS) return "<no text in " + r.body + ">";
  return std::string(text);
}

TEST(gguf_serve, a_gguf_file_alone_serves_like_the_llama2c_pair) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  const auto gguf = write_stories_gguf();
  const std::string body = R"({"prompt":"Once upon a time","max_tokens":24,"temperature":0})";
  std::string want;
  {
    server_process original;
    ASSERT_TRUE(original.ready()) << original.error();
    want = completion_text(post(original.port(), "/v1/completions", body));
  }
  server_process served({"--model", gguf.string(), "--tokenizer", ""});
  ASSERT_TRUE(served.ready()) << served.error();
  const raw_response r = post(served.port(), "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(completion_text(r), want);
  const raw_response chat = post(served.port(), "/v1/chat/completions",
                                 R"({"messages":[{"role":"user","content":"Lily"}],"max_tokens":4,"temperature":0})");
  EXPECT_EQ(chat.status, 200) << chat.body << "\n" << served.log();  // the file's chat template renders it

  // The tokenize CLI reads the tokenizer out of the same file, with llama2.c's ids.
  for (const char* text : {"Once upon a time", "One day, Lily met a cat. caf\xc3\xa9!"}) {
    const auto a = run_process({test::server_binary().string(), "tokenize", "--tokenizer", gguf.string(), "--text", text},
                               std::chrono::seconds(30));
    const auto b = run_process({test::server_binary().string(), "tokenize", "--tokenizer", tokenizer_path().string(),
                                "--text", text},
                               std::chrono::seconds(30));
    ASSERT_TRUE(a.exited && a.exit_code == 0) << a.err;
    EXPECT_EQ(a.out, b.out) << text;
  }
  std::filesystem::remove(gguf);
}

// A split model (llama.cpp's gguf-split layout, as the hub serves large models) serves from its first
// file like the same model in one file; its second file alone is refused, naming the first.
TEST(gguf_serve, a_split_gguf_serves_like_the_single_file) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  const auto single = write_stories_gguf();
  const auto first = write_stories_gguf(true, 3);
  ASSERT_TRUE(std::filesystem::exists(first));
  const std::string body = R"({"prompt":"Once upon a time","max_tokens":24,"temperature":0})";
  std::string want;
  {
    server_process whole({"--model", single.string(), "--tokenizer", ""});
    ASSERT_TRUE(whole.ready()) << whole.error();
    want = completion_text(post(whole.port(), "/v1/completions", body));
  }
  {
    server_process split({"--model", first.string(), "--tokenizer", ""});
    ASSERT_TRUE(split.ready()) << split.error();
    const raw_response r = post(split.port(), "/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(completion_text(r), want);
    EXPECT_NE(split.log().find("3 splits"), std::string::npos) << split.log();
  }
  const std::string second = std::regex_replace(first.string(), std::regex("-00001-of-"), "-00002-of-");
  const auto refused = run_process({test::server_binary().string(), "serve", "--model", second, "--tokenizer", "",
                                    "--port", "0"},
                                   std::chrono::seconds(60));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE((refused.out + refused.err).find("open its first file, " + first.filename().string()), std::string::npos)
      << refused.out << refused.err;
  for (int s = 1; s <= 3; ++s)
    std::filesystem::remove(std::regex_replace(first.string(), std::regex("-00001-of-"), "-0000" + std::to_string(s) + "-of-"));
  std::filesystem::remove(single);
}

}  // namespace
}  // namespace pagedserve::e2e
