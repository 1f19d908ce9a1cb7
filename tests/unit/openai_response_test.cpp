// OpenAI responses: every encoder's output is JSON of the documented shape.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "api/openai_response.hpp"

namespace pagedserve::openai {
namespace {

// A tokenizer whose token i is the text "t<i>" (and 9 an incomplete UTF-8 byte).
class fake_tokenizer : public tokenizer {
 public:
  std::vector<token_id> encode(std::string_view, bool) const override { return {}; }
  std::string decode_piece(token_id, token_id id) const override { return id == 9 ? "\xE2" : "t" + std::to_string(id); }
  int vocab_size() const override { return 16; }
  token_id bos_id() const override { return 1; }
  token_id eos_id() const override { return 2; }
};

simdjson::dom::element parse(simdjson::dom::parser& parser, const std::string& json) {
  simdjson::dom::element e;
  EXPECT_EQ(parser.parse(json).get(e), simdjson::SUCCESS) << json;
  return e;
}

response_meta meta(endpoint kind) { return {kind, "id-1", 1700000000, "m"}; }

TEST(openai_response, error_object) {
  simdjson::dom::parser parser;
  auto e = parse(parser, encode_error({429, "full \"now\"", "rate_limit_error", "", "queue_full"}));
  EXPECT_EQ(std::string_view(e["error"]["message"]), "full \"now\"");
  EXPECT_EQ(std::string_view(e["error"]["type"]), "rate_limit_error");
  EXPECT_TRUE(e["error"]["param"].is_null());
  EXPECT_EQ(std::string_view(e["error"]["code"]), "queue_full");
}

TEST(openai_response, chat_chunk_first_delta_has_role) {
  simdjson::dom::parser parser;
  choice_piece c;
  c.text = "Hi";
  c.with_role = true;
  auto e = parse(parser, encode_chunk(meta(endpoint::chat_completions), c, {nullptr, false, true}));
  EXPECT_EQ(std::string_view(e["object"]), "chat.completion.chunk");
  EXPECT_EQ(std::string_view(e["choices"].at(0)["delta"]["role"]), "assistant");
  EXPECT_EQ(std::string_view(e["choices"].at(0)["delta"]["content"]), "Hi");
  EXPECT_TRUE(e["choices"].at(0)["finish_reason"].is_null());
  EXPECT_TRUE(e["usage"].is_null());
  c.with_role = false;
  c.finish_reason = "length";
  auto last = parse(parser, encode_chunk(meta(endpoint::chat_completions), c, {}));
  EXPECT_EQ(last["choices"].at(0)["delta"]["role"].error(), simdjson::NO_SUCH_FIELD);
  EXPECT_EQ(std::string_view(last["choices"].at(0)["finish_reason"]), "length");
  EXPECT_EQ(last["usage"].error(), simdjson::NO_SUCH_FIELD) << "no usage key without include_usage";
}

TEST(openai_response, usage_chunk_and_whole_responses) {
  simdjson::dom::parser parser;
  auto u = parse(parser, encode_usage_chunk(meta(endpoint::completions), {5, 7}));
  EXPECT_EQ(simdjson::dom::array(u["choices"]).size(), 0u);
  EXPECT_EQ(int64_t(u["usage"]["total_tokens"]), 12);
  std::vector<choice_piece> choices(2);
  choices[0].text = "a";
  choices[0].finish_reason = "stop";
  choices[1].index = 1;
  choices[1].text = "b\n\"c\"";
  choices[1].finish_reason = "length";
  auto c = parse(parser, encode_response(meta(endpoint::completions), choices, {3, 4}, {}));
  EXPECT_EQ(std::string_view(c["object"]), "text_completion");
  EXPECT_EQ(std::string_view(c["choices"].at(1)["text"]), "b\n\"c\"");
  EXPECT_EQ(int64_t(c["choices"].at(1)["index"]), 1);
  EXPECT_EQ(int64_t(c["usage"]["prompt_tokens"]), 3);
  auto chat = parse(parser, encode_response(meta(endpoint::chat_completions), choices, {3, 4}, {}));
  EXPECT_EQ(std::string_view(chat["object"]), "chat.completion");
  EXPECT_EQ(std::string_view(chat["choices"].at(0)["message"]["role"]), "assistant");
  EXPECT_EQ(std::string_view(chat["choices"].at(0)["message"]["content"]), "a");
  EXPECT_EQ(std::string_view(chat["choices"].at(0)["finish_reason"]), "stop");
}

TEST(openai_response, logprobs_in_each_endpoints_shape) {
  fake_tokenizer tok;
  choice_piece c;
  c.text = "t3t9";
  c.ids = {3, 9};
  c.logprobs = {{-0.5f, {{3, -0.5f}, {4, -1.25f}}}, {-2.0f, {{9, -2.0f}}}};
  c.text_offset = 10;
  simdjson::dom::parser parser;
  auto legacy = parse(parser, encode_logprobs(endpoint::completions, c, tok));
  EXPECT_EQ(std::string_view(legacy["tokens"].at(0)), "t3");
  EXPECT_EQ(std::string_view(legacy["tokens"].at(1)), "\xEF\xBF\xBD") << "a partial character is U+FFFD";
  EXPECT_DOUBLE_EQ(double(legacy["token_logprobs"].at(0)), -0.5);
  EXPECT_DOUBLE_EQ(double(legacy["top_logprobs"].at(0)["t4"]), -1.25);
  EXPECT_EQ(int64_t(legacy["text_offset"].at(0)), 10);
  EXPECT_EQ(int64_t(legacy["text_offset"].at(1)), 12);
  auto chat = parse(parser, encode_logprobs(endpoint::chat_completions, c, tok));
  auto first = chat["content"].at(0);
  EXPECT_EQ(std::string_view(first["token"]), "t3");
  EXPECT_DOUBLE_EQ(double(first["logprob"]), -0.5);
  EXPECT_EQ(int64_t(first["bytes"].at(0)), 't');
  EXPECT_EQ(std::string_view(first["top_logprobs"].at(1)["token"]), "t4");
  EXPECT_EQ(int64_t(chat["content"].at(1)["bytes"].at(0)), 0xE2);
}

TEST(openai_response, models_tokenize_detokenize) {
  simdjson::dom::parser parser;
  auto m = parse(parser, encode_models({{"alias", "stories260K", 1, 512}}));
  EXPECT_EQ(std::string_view(m["object"]), "list");
  EXPECT_EQ(std::string_view(m["data"].at(0)["id"]), "alias");
  EXPECT_EQ(std::string_view(m["data"].at(0)["object"]), "model");
  EXPECT_EQ(int64_t(m["data"].at(0)["max_model_len"]), 512);
  std::vector<std::string> strs{"a", "\xE2"};
  auto t = parse(parser, encode_tokenize({1, 2}, 512, &strs));
  EXPECT_EQ(int64_t(t["count"]), 2);
  EXPECT_EQ(int64_t(t["tokens"].at(1)), 2);
  EXPECT_EQ(std::string_view(t["token_strs"].at(1)), "\xEF\xBF\xBD");
  auto d = parse(parser, encode_detokenize("caf\xC3\xA9"));
  EXPECT_EQ(std::string_view(d["prompt"]), "caf\xC3\xA9");
}

TEST(openai_response, ids_and_finish_reasons) {
  EXPECT_TRUE(new_response_id(endpoint::completions).starts_with("cmpl-"));
  EXPECT_TRUE(new_response_id(endpoint::chat_completions).starts_with("chatcmpl-"));
  EXPECT_NE(new_response_id(endpoint::completions), new_response_id(endpoint::completions));
  EXPECT_EQ(finish_reason_text(finish_reason::cancelled), "abort");
}

}  // namespace
}  // namespace pagedserve::openai
