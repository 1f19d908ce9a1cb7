// OpenAI request bodies: every accepted shape parses into the right fields; every bad one gets a
// 400 (or the documented status) naming the argument.
#include <gtest/gtest.h>

#include "api/openai_request.hpp"
#include "api/ws_protocol.hpp"

namespace pagedserve::openai {
namespace {

const parse_limits limits{512, 4, 8};

api_error completion_error(std::string_view body) {
  auto r = parse_completion_request(body, limits);
  EXPECT_FALSE(r.has_value()) << body;
  return r ? api_error{} : r.error();
}

api_error chat_error(std::string_view body) {
  auto r = parse_chat_request(body, limits);
  EXPECT_FALSE(r.has_value()) << body;
  return r ? api_error{} : r.error();
}

// --max-logprobs bounds the alternatives per token on both endpoints.
TEST(openai_request, max_logprobs_bounds_the_alternatives) {
  parse_limits five = limits;
  five.max_logprobs = 5;
  EXPECT_TRUE(parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":5})", five));
  auto chat = parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":6})", five);
  ASSERT_FALSE(chat);
  EXPECT_EQ(chat.error().param, "top_logprobs");
  EXPECT_TRUE(parse_completion_request(R"({"prompt":"x","logprobs":5})", five));
  auto completion = parse_completion_request(R"({"prompt":"x","logprobs":6})", five);
  ASSERT_FALSE(completion);
  EXPECT_EQ(completion.error().param, "logprobs");
  EXPECT_TRUE(parse_completion_request(R"({"prompt":"x","logprobs":20})", limits)) << "vLLM's default: 20";
}

// logit_bias as a JSON object: a repeated key means its last value, so a body repeating one id
// 130k times leaves one entry for the sampler to apply per token; distinct ids are bounded at 300.
std::string logit_bias_body(int n_entries, bool distinct) {
  std::string body = R"({"prompt":"x","logit_bias":{)";
  for (int i = 0; i < n_entries; ++i) {
    if (i) body += ',';
    body += '"' + std::to_string(distinct ? i : 5) + "\":" + std::to_string(i % 100 - 50);
  }
  return body + "}}";
}

TEST(openai_request, logit_bias_duplicates_merge_last_wins) {
  auto r = parse_completion_request(R"({"prompt":"x","logit_bias":{"5":1,"9":-3,"5":-100,"9":4.5,"5":7}})", limits);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->params.logit_bias, (std::vector<std::pair<token_id, float>>{{5, 7.0f}, {9, 4.5f}}));
  // 130k copies of one key: one entry, the last value (129999 % 100 - 50 = 49).
  auto many = parse_completion_request(logit_bias_body(130000, false), limits);
  ASSERT_TRUE(many) << many.error().message;
  EXPECT_EQ(many->params.logit_bias, (std::vector<std::pair<token_id, float>>{{5, 49.0f}}));
}

TEST(openai_request, logit_bias_entry_count_is_bounded) {
  const parse_limits big_vocab{32000, 4, 8, {}};
  auto at_limit = parse_completion_request(logit_bias_body(static_cast<int>(max_logit_bias_entries), true), big_vocab);
  ASSERT_TRUE(at_limit) << at_limit.error().message;
  EXPECT_EQ(at_limit->params.logit_bias.size(), max_logit_bias_entries);
  auto over = parse_completion_request(logit_bias_body(static_cast<int>(max_logit_bias_entries) + 1, true), big_vocab);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().status, 400);
  EXPECT_EQ(over.error().param, "logit_bias");
  EXPECT_NE(over.error().message.find("300"), std::string::npos) << over.error().message;
  auto chat = parse_chat_request(
      R"({"messages":[{"role":"user","content":"x"}],"logit_bias":)" +
          logit_bias_body(400, true).substr(std::string(R"({"prompt":"x","logit_bias":)").size()),
      big_vocab);
  ASSERT_FALSE(chat);
  EXPECT_EQ(chat.error().param, "logit_bias");
}

TEST(openai_request, completion_with_every_argument) {
  auto r = parse_completion_request(
      R"({"model":"m","prompt":"hi","max_tokens":5,"temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.05,)"
      R"("n":2,"seed":7,"stop":["a","b"],"presence_penalty":0.5,"frequency_penalty":-0.5,"repetition_penalty":1.1,)"
      R"("logit_bias":{"13":-100,"7":2.5},"logprobs":3,"echo":false,"ignore_eos":true,"user":"u","stream":true,)"
      R"("stream_options":{"include_usage":true},"best_of":2,"suffix":null})",
      limits);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->kind, endpoint::completions);
  EXPECT_EQ(r->model, "m");
  ASSERT_EQ(r->prompts.size(), 1u);
  EXPECT_EQ(*r->prompts[0].text, "hi");
  EXPECT_EQ(r->params.max_tokens, 5);
  EXPECT_FLOAT_EQ(r->params.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r->params.top_p, 0.9f);
  EXPECT_EQ(r->params.top_k, 40);
  EXPECT_FLOAT_EQ(r->params.min_p, 0.05f);
  EXPECT_EQ(r->n, 2);
  EXPECT_EQ(r->params.seed, 7u);
  EXPECT_EQ(r->params.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_FLOAT_EQ(r->params.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r->params.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(r->params.repetition_penalty, 1.1f);
  EXPECT_EQ(r->params.logit_bias, (std::vector<std::pair<token_id, float>>{{13, -100.0f}, {7, 2.5f}}));
  EXPECT_TRUE(r->logprobs);
  EXPECT_EQ(r->params.logprobs, 3);
  EXPECT_TRUE(r->params.ignore_eos);
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_EQ(r->user, "u");
}

TEST(openai_request, completion_defaults_and_prompt_shapes) {
  auto r = parse_completion_request(R"({"prompt":"x"})", limits);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->params.max_tokens, 16);  // OpenAI's legacy default
  EXPECT_EQ(r->n, 1);
  EXPECT_FALSE(r->stream);
  EXPECT_EQ(r->params.logprobs, -1);

  auto ids = parse_completion_request(R"({"prompt":[1,2,3]})", limits);
  ASSERT_TRUE(ids);
  ASSERT_EQ(ids->prompts.size(), 1u);
  EXPECT_FALSE(ids->prompts[0].text);
  EXPECT_EQ(ids->prompts[0].ids, (std::vector<token_id>{1, 2, 3}));

  auto many = parse_completion_request(R"({"prompt":["a",[4,5]],"n":2})", limits);
  ASSERT_TRUE(many);
  ASSERT_EQ(many->prompts.size(), 2u);
  EXPECT_EQ(*many->prompts[0].text, "a");
  EXPECT_EQ(many->prompts[1].ids, (std::vector<token_id>{4, 5}));

  auto nulls = parse_completion_request(R"({"prompt":"x","max_tokens":null,"seed":null,"stop":null,"user":null})", limits);
  ASSERT_TRUE(nulls) << "null means not given";
  EXPECT_FALSE(nulls->params.seed);
  auto float_int = parse_completion_request(R"({"prompt":"x","max_tokens":5.0})", limits);
  ASSERT_TRUE(float_int);
  EXPECT_EQ(float_int->params.max_tokens, 5);
}

// The served model's generation_config.json defaults fill what a request leaves out, never what it sets.
TEST(openai_request, model_defaults_fill_unset_fields) {
  parse_limits with_defaults = limits;
  with_defaults.defaults.temperature = 0.6f;
  with_defaults.defaults.top_k = 20;
  with_defaults.defaults.repetition_penalty = 1.05f;
  auto chat = parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],"top_k":5})", with_defaults);
  ASSERT_TRUE(chat.has_value());
  EXPECT_FLOAT_EQ(chat->params.temperature, 0.6f);
  EXPECT_EQ(chat->params.top_k, 5);
  EXPECT_FLOAT_EQ(chat->params.repetition_penalty, 1.05f);
  EXPECT_EQ(chat->params.max_tokens, 0);
  auto completion = parse_completion_request(R"({"prompt":"hi","temperature":0})", with_defaults);
  ASSERT_TRUE(completion.has_value());
  EXPECT_FLOAT_EQ(completion->params.temperature, 0.0f);
  EXPECT_EQ(completion->params.top_k, 20);
  EXPECT_EQ(completion->params.max_tokens, 16);  // legacy completions keep OpenAI's default length
}

TEST(openai_request, completion_rejections_name_the_argument) {
  EXPECT_EQ(completion_error(R"({"prompt":"x",)").code, "invalid_json");
  EXPECT_EQ(completion_error(R"([1,2])").code, "invalid_json");
  EXPECT_EQ(completion_error(R"({"max_tokens":3})").param, "prompt");
  EXPECT_EQ(completion_error(R"({"prompt":[]})").param, "prompt");
  EXPECT_EQ(completion_error(R"({"prompt":[1,512]})").param, "prompt");  // outside the vocabulary
  EXPECT_EQ(completion_error(R"({"prompt":[1,-1]})").param, "prompt");
  EXPECT_EQ(completion_error(R"({"prompt":{"a":1}})").code, "invalid_type");
  EXPECT_EQ(completion_error(R"({"prompt":"x","max_tokens":0})").param, "max_tokens");
  EXPECT_EQ(completion_error(R"({"prompt":"x","max_tokens":"5"})").code, "invalid_type");
  EXPECT_EQ(completion_error(R"({"prompt":"x","max_tokens":2.5})").code, "invalid_type");
  // Integral doubles beyond int64 (a fuzz finding: the cast was undefined behaviour).
  EXPECT_EQ(completion_error(R"({"prompt":"x","max_tokens":4.3e32})").param, "max_tokens");
  EXPECT_EQ(completion_error(R"({"prompt":[1,43e31]})").param, "prompt");
  EXPECT_EQ(completion_error(R"({"prompt":"x","max_tokens":-9.3e18})").param, "max_tokens");
  EXPECT_EQ(completion_error(R"({"prompt":"x","temperature":-1})").param, "temperature");
  EXPECT_EQ(completion_error(R"({"prompt":"x","top_p":0})").param, "top_p");
  EXPECT_EQ(completion_error(R"({"prompt":"x","n":5})").param, "n");  // limits.max_n is 4
  EXPECT_EQ(completion_error(R"({"prompt":["a","b","c"],"n":3})").param, "n");  // 9 choices > 8
  EXPECT_EQ(completion_error(R"({"prompt":"x","stop":[1]})").param, "stop");
  EXPECT_EQ(completion_error(R"({"prompt":"x","stop":""})").param, "stop");
  EXPECT_EQ(completion_error(R"({"prompt":"x","logit_bias":{"abc":1}})").param, "logit_bias");
  EXPECT_EQ(completion_error(R"({"prompt":"x","logit_bias":{"600":1}})").param, "logit_bias");
  EXPECT_EQ(completion_error(R"({"prompt":"x","logit_bias":{"5":101}})").param, "logit_bias");
  EXPECT_EQ(completion_error(R"({"prompt":"x","logprobs":21})").param, "logprobs");
  EXPECT_EQ(completion_error(R"({"prompt":"x","echo":true,"logprobs":1})").param, "echo");
  EXPECT_EQ(completion_error(R"({"prompt":"x","stream_options":{"include_usage":true}})").param, "stream_options");
  EXPECT_EQ(completion_error(R"({"prompt":"x","stream":true,"stream_options":{"bogus":true}})").param, "stream_options");
  EXPECT_EQ(completion_error(R"({"prompt":"x","best_of":3,"n":2})").param, "best_of");
  EXPECT_EQ(completion_error(R"({"prompt":"x","suffix":"end"})").param, "suffix");
}

// Fields other servers define are accepted and named (vLLM's policy); known fields keep their checks.
TEST(openai_request, unknown_fields_are_ignored_and_named) {
  auto c = parse_completion_request(R"({"prompt":"x","cache_prompt":true,"samplers":["top_k"],"n_probs":3,)"
                                    R"("max_tokens":4,"top_a":0.5})",
                                    limits);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->ignored_fields, (std::vector<std::string>{"cache_prompt", "samplers", "n_probs", "top_a"}));
  EXPECT_EQ(c->params.max_tokens, 4);
  auto chat = parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"echo":true,"cache_prompt":1})", limits);
  ASSERT_TRUE(chat) << chat.error().message;
  EXPECT_EQ(chat->ignored_fields, (std::vector<std::string>{"echo", "cache_prompt"}));
  // null counts as absent, so it is not named either
  auto none = parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"cache_prompt":null})", limits);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->ignored_fields.empty());
  // A known field's bad value is still a 400, whatever else the body holds.
  EXPECT_EQ(completion_error(R"({"prompt":"x","cache_prompt":true,"temperature":"hot"})").param, "temperature");
  // /tokenize keeps refusing what it does not know.
  auto t = parse_tokenize_request(R"({"prompt":"x","cache_prompt":true})");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, "unknown_parameter");
}

TEST(openai_request, chat_messages_and_logprobs) {
  auto r = parse_chat_request(
      R"({"messages":[{"role":"developer","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},)"
      R"({"type":"text","text":"b"}],"name":"x"},{"role":"assistant","content":"ok"}],"logprobs":true,"top_logprobs":2,)"
      R"("max_completion_tokens":9,"response_format":{"type":"text"},"tools":[]})",
      limits);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->kind, endpoint::chat_completions);
  ASSERT_EQ(r->messages.size(), 3u);
  EXPECT_EQ(r->messages[0].role, "system");
  EXPECT_EQ(r->messages[1].content, "ab");
  EXPECT_EQ(r->messages[2].role, "assistant");
  EXPECT_TRUE(r->logprobs);
  EXPECT_EQ(r->params.logprobs, 2);
  EXPECT_EQ(r->params.max_tokens, 9);

  auto plain = parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}]})", limits);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->params.max_tokens, 0);  // the rest of the context
  EXPECT_EQ(plain->params.logprobs, -1);
  auto bare = parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],"logprobs":true})", limits);
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->params.logprobs, 0);
}

TEST(openai_request, chat_rejections) {
  EXPECT_EQ(chat_error(R"({"model":"m"})").param, "messages");
  EXPECT_EQ(chat_error(R"({"messages":[]})").param, "messages");
  EXPECT_EQ(chat_error(R"({"messages":"hi"})").code, "invalid_type");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"wizard","content":"x"}]})").param, "messages");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user"}]})").param, "messages");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})").param,
            "messages[].content");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})").param, "top_logprobs");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]})").param, "tools[].function");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"yaml"}})").param,
            "response_format");
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user","content":"x"}],"functions":[]})").param, "functions");
}

TEST(openai_request, tokenize_and_detokenize) {
  auto t = parse_tokenize_request(R"({"prompt":"hello","add_special_tokens":false,"return_token_strs":true})");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->prompt, "hello");
  EXPECT_FALSE(t->add_special_tokens);
  EXPECT_TRUE(t->return_token_strs);
  EXPECT_FALSE(parse_tokenize_request(R"({"add_special_tokens":true})"));
  EXPECT_FALSE(parse_tokenize_request(R"({"prompt":"x","messages":[]})"));
  auto d = parse_detokenize_request(R"({"tokens":[1,2,3]})", limits);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->tokens, (std::vector<token_id>{1, 2, 3}));
  EXPECT_FALSE(parse_detokenize_request(R"({"tokens":[1,9999]})", limits));
  EXPECT_FALSE(parse_detokenize_request(R"({"tokens":"abc"})", limits));
}

TEST(openai_request, engine_errors_map_to_statuses) {
  const auto of = [](engine_error e) { return error_from_engine({e, "why"}); };
  EXPECT_EQ(of(engine_error::queue_full).status, 429);
  EXPECT_EQ(of(engine_error::queue_full).type, "rate_limit_error");
  EXPECT_EQ(of(engine_error::queue_full).code, "queue_full");
  EXPECT_EQ(of(engine_error::too_many_requests).status, 429);
  EXPECT_EQ(of(engine_error::context_length_exceeded).status, 400);
  EXPECT_EQ(of(engine_error::context_length_exceeded).param, "");
  EXPECT_EQ(of(engine_error::invalid_max_tokens).status, 400);
  EXPECT_EQ(of(engine_error::invalid_max_tokens).param, "max_tokens");
  EXPECT_EQ(of(engine_error::invalid_request).status, 400);
  EXPECT_EQ(of(engine_error::invalid_request).param, "prompt");
  EXPECT_EQ(of(engine_error::shutting_down).status, 503);
  EXPECT_EQ(of(engine_error::request_timeout).status, 504);
  EXPECT_EQ(of(engine_error::client_too_slow).status, 500);
  EXPECT_EQ(of(engine_error::client_too_slow).type, "server_error");
  EXPECT_EQ(of(engine_error::invalid_request).message, "why");
}

// The WebSocket error frame and the OpenAI error carry the same code, from the one table.
TEST(openai_request, engine_error_codes_are_the_same_on_both_protocols) {
  for (const engine_error_wire& row : engine_error_table) {
    const engine_failure f{row.error, "m"};
    EXPECT_EQ(error_from_engine(f).code, row.code);
    EXPECT_EQ(encode_error_frame("r1", f),
              R"({"type":"error","id":"r1","code":")" + std::string(row.code) + R"(","message":"m"})");
  }
}

}  // namespace
}  // namespace pagedserve::openai
