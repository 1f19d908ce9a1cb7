// Client frames: every accepted shape parses, every bad one gets its stable code; server frames are JSON.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <limits>

#include "api/ws_protocol.hpp"

namespace pagedserve {
namespace {

std::string code_of(std::string_view frame) {
  auto f = parse_client_frame(frame);
  auto* e = std::get_if<protocol_error>(&f);
  return e ? e->code : "accepted";
}

TEST(ws_protocol, generate_with_every_param) {
  auto f = parse_client_frame(
      R"({"type":"generate","id":"r1","prompt":"hi","params":{"max_tokens":5,"temperature":0.5,"top_p":0.9,)"
      R"("top_k":40,"min_p":0.05,"seed":7,"stop":["a","b"],"ignore_eos":true}})");
  auto* g = std::get_if<generate_command>(&f);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->id, "r1");
  EXPECT_EQ(*g->prompt, "hi");
  EXPECT_EQ(g->params.max_tokens, 5);
  EXPECT_FLOAT_EQ(g->params.temperature, 0.5f);
  EXPECT_FLOAT_EQ(g->params.top_p, 0.9f);
  EXPECT_EQ(g->params.top_k, 40);
  EXPECT_FLOAT_EQ(g->params.min_p, 0.05f);
  EXPECT_EQ(g->params.seed, 7u);
  EXPECT_EQ(g->params.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(g->params.ignore_eos);
}

TEST(ws_protocol, generate_params_start_from_the_model_defaults) {
  sampling_params defaults;
  defaults.temperature = 0.7f;
  defaults.top_p = 0.8f;
  const auto frame = parse_client_frame(R"({"type":"generate","id":"a","prompt":"x","params":{"top_p":0.5}})", defaults);
  const auto* g = std::get_if<generate_command>(&frame);
  ASSERT_NE(g, nullptr);
  EXPECT_FLOAT_EQ(g->params.temperature, 0.7f);
  EXPECT_FLOAT_EQ(g->params.top_p, 0.5f);
  EXPECT_EQ(g->params.max_tokens, 0);
}

TEST(ws_protocol, logprobs_bounded_by_the_server_s_max_logprobs) {
  const std::string frame = R"({"type":"generate","id":"a","prompt":"x","params":{"logprobs":8}})";
  const auto accepted = parse_client_frame(frame, {}, 8);
  EXPECT_NE(std::get_if<generate_command>(&accepted), nullptr);
  const auto refused = parse_client_frame(frame, {}, 7);
  EXPECT_NE(std::get_if<protocol_error>(&refused), nullptr);
}

TEST(ws_protocol, messages_and_cancel) {
  auto f = parse_client_frame(R"({"type":"generate","id":"m","messages":[{"role":"user","content":"hello"}]})");
  auto* g = std::get_if<generate_command>(&f);
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(g->messages.size(), 1u);
  EXPECT_EQ(g->messages[0].content, "hello");
  EXPECT_EQ(g->params.max_tokens, 0) << "absent max_tokens is filled from the context later";
  auto c = parse_client_frame(R"({"type":"cancel","id":"m"})");
  ASSERT_TRUE(std::holds_alternative<cancel_command>(c));
}

TEST(ws_protocol, bad_frames_get_stable_codes) {
  EXPECT_EQ(code_of("{bad"), "invalid_json");
  EXPECT_EQ(code_of(""), "invalid_json");
  EXPECT_EQ(code_of("[1,2]"), "invalid_request");
  EXPECT_EQ(code_of(R"({"id":"x","prompt":"p"})"), "invalid_request");
  EXPECT_EQ(code_of(R"({"type":"generate","prompt":"p"})"), "invalid_request");
  EXPECT_EQ(code_of(R"({"type":"generate","id":5,"prompt":"p"})"), "invalid_request");
  EXPECT_EQ(code_of(R"({"type":"generate","id":"x"})"), "invalid_request");
  EXPECT_EQ(code_of(R"({"type":"generate","id":"x","prompt":7})"), "invalid_request");
  EXPECT_EQ(code_of(R"({"type":"generate","id":"x","prompt":"p","messages":[{"role":"user","content":"c"}]})"),
            "invalid_request");
  EXPECT_EQ(code_of(R"({"type":"dance","id":"x"})"), "unknown_type");
  EXPECT_EQ(code_of(R"({"type":"generate","id":"x","prompt":"p","params":{"max_tokens":"ten"}})"), "invalid_request");
  EXPECT_EQ(code_of(R"({"type":"generate","id":"x","prompt":"p","params":{"max_tokens":0}})"), "invalid_max_tokens");
  EXPECT_EQ(code_of(R"({"type":"generate","id":"x","prompt":"p","params":{"max_tokens":-3}})"), "invalid_max_tokens");
  EXPECT_EQ(code_of(R"({"type":"generate","id":"x","prompt":"p","params":{"max_tokens":2.5}})"), "invalid_request");
  EXPECT_EQ(code_of(R"({"type":"generate","id":"x","prompt":"p","params":{"temperature":"hot"}})"), "invalid_request");
  EXPECT_EQ(code_of(R"({"type":"generate","id":"x","prompt":"p","params":{"temperature":-1}})"), "invalid_request");
  EXPECT_EQ(code_of(R"({"type":"generate","id":"x","prompt":"p","params":{"top_p":0}})"), "invalid_request");
  EXPECT_EQ(code_of(R"({"type":"generate","id":"x","prompt":"p","params":{"stop":[1]}})"), "invalid_request");
  EXPECT_EQ(code_of(R"({"type":"generate","id":"x","messages":[]})"), "invalid_request");
  EXPECT_EQ(code_of(R"({"type":"generate","id":"x","messages":[{"role":"robot","content":"c"}]})"), "invalid_request");
  EXPECT_EQ(code_of(R"({"type":"cancel","id":"x","extra":1})"), "unknown_field");
}

// A 1 MiB type or key must not come back as a 1 MiB error (issue 17 item 4): at most 64 bytes of it are
// quoted, cut on a code point boundary so the error frame stays valid JSON.
TEST(ws_protocol, client_text_quoted_in_errors_is_clipped_on_a_code_point) {
  const std::string type(1 << 20, 't');
  auto f = std::get<protocol_error>(parse_client_frame(R"({"type":")" + type + R"(","id":"x"})"));
  EXPECT_EQ(f.code, "unknown_type");
  EXPECT_EQ(f.message, "unknown type '" + std::string(64, 't') + "...' (expected generate or cancel)");
  std::string key = "a";  // 1 + 2k bytes: 64 falls inside an "é" (2 bytes)
  while (key.size() < 4000) key += "é";
  for (const std::string& frame : {R"({"type":"cancel","id":"x",")" + key + R"(":1})",
                                   R"({"type":"generate","id":"x","messages":[{")" + key + R"(":"c"}]})"}) {
    auto e = std::get<protocol_error>(parse_client_frame(frame));
    EXPECT_EQ(e.code, "unknown_field");
    EXPECT_LT(e.message.size(), 100u) << e.message;
    EXPECT_TRUE(e.message.ends_with("é...'")) << e.message;  // the whole code point before the cut
    const std::string out = encode_error_frame(e.id, e.code, e.message);
    simdjson::dom::parser parser;
    simdjson::dom::element el;
    EXPECT_EQ(parser.parse(out).get(el), simdjson::SUCCESS) << out;  // simdjson rejects broken UTF-8
  }
  // Short text is quoted whole, as before.
  EXPECT_EQ(std::get<protocol_error>(parse_client_frame(R"({"type":"dance","id":"x"})")).message,
            "unknown type 'dance' (expected generate or cancel)");
}

TEST(ws_protocol, error_frames_carry_the_id_when_it_was_readable) {
  auto f = parse_client_frame(R"({"type":"generate","id":"abc","prompt":"p","params":{"max_tokens":0}})");
  EXPECT_EQ(std::get<protocol_error>(f).id, "abc");
  auto g = parse_client_frame("{bad");
  EXPECT_FALSE(std::get<protocol_error>(g).id.has_value());
}

TEST(ws_protocol, server_frames_are_valid_json_for_any_text) {
  simdjson::dom::parser parser;
  const std::string nasty = "quote\" backslash\\ newline\n tab\t bell\x07 café 🐶 </script>";
  const std::string t = encode_token_frame("id\"1", {nasty, {1, 2, 3}, {}});
  simdjson::dom::element e;
  ASSERT_EQ(parser.parse(t).get(e), simdjson::SUCCESS) << t;
  EXPECT_EQ(std::string_view(e["text"]), nasty);
  EXPECT_EQ(std::string_view(e["id"]), "id\"1");
  final_event cancelled;
  cancelled.reason = finish_reason::cancelled;
  cancelled.used = {3, 4};
  const std::string d = encode_done_frame("x", cancelled);
  ASSERT_EQ(parser.parse(d).get(e), simdjson::SUCCESS) << d;
  EXPECT_EQ(std::string_view(e["finish_reason"]), "cancelled");
  EXPECT_EQ(int64_t(e["usage"]["total_tokens"]), 7);
  const std::string err = encode_error_frame(std::nullopt, "invalid_json", "bad");
  ASSERT_EQ(parser.parse(err).get(e), simdjson::SUCCESS) << err;
  EXPECT_TRUE(e["id"].is_null());
}

// A token the sampler ruled out has logprob -inf; a broken logit may give NaN. std::to_string wrote
// them as "-inf" and "nan", which no JSON parser accepts; the shared number writer keeps the frame JSON.
TEST(ws_protocol, token_frames_with_non_finite_logprobs_are_valid_json) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  token_event ev{"ab", {1, 2}, {}};
  ev.logprobs.push_back({-inf, {{7, -inf}, {8, nan}}});
  ev.logprobs.push_back({nan, {{9, -0.25f}, {10, inf}}});
  const std::string t = encode_token_frame("r", ev);
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  ASSERT_EQ(parser.parse(t).get(e), simdjson::SUCCESS) << t;
  simdjson::dom::array lps = e["logprobs"];
  ASSERT_EQ(lps.size(), 2u);
  EXPECT_EQ(double(e["logprobs"].at(0)["logprob"]), -9999.0);  // the OpenAI encoder's "never"
  EXPECT_EQ(double(e["logprobs"].at(0)["top"].at(0).at(1)), -9999.0);
  EXPECT_EQ(double(e["logprobs"].at(0)["top"].at(1).at(1)), 0.0);
  EXPECT_EQ(double(e["logprobs"].at(1)["logprob"]), 0.0);
  EXPECT_EQ(int64_t(e["logprobs"].at(1)["top"].at(0).at(0)), 9);
  EXPECT_EQ(double(e["logprobs"].at(1)["top"].at(0).at(1)), -0.25);  // finite values keep their digits
  EXPECT_EQ(t.find("inf"), std::string::npos) << t;
  EXPECT_EQ(t.find("nan"), std::string::npos) << t;
}

// Unknown fields of a generate frame and of its params are ignored and named (reported in the done
// frame), as the OpenAI endpoints do; a known field's bad value is still refused.
TEST(ws_protocol, unknown_generate_fields_are_ignored_and_named) {
  auto f = parse_client_frame(R"({"type":"generate","id":"x","prompt":"p","colour":"red","params":{"beam":2,"max_tokens":3}})");
  auto* g = std::get_if<generate_command>(&f);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->ignored_fields, (std::vector<std::string>{"colour", "params.beam"}));
  EXPECT_EQ(g->params.max_tokens, 3);
  final_event done;
  done.reason = finish_reason::stop;
  const std::string d = encode_done_frame("x", done, g->ignored_fields);
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  ASSERT_EQ(parser.parse(d).get(e), simdjson::SUCCESS) << d;
  EXPECT_EQ(simdjson::minify(e["ignored_fields"]), R"(["colour","params.beam"])");
  EXPECT_TRUE(std::holds_alternative<protocol_error>(
      parse_client_frame(R"({"type":"generate","id":"x","prompt":"p","colour":"red","params":{"top_p":7}})")));
}

TEST(ws_protocol, tools_and_tool_messages_in_a_generate_frame) {
  auto f = parse_client_frame(
      R"({"type":"generate","id":"t","messages":[{"role":"user","content":"w?"},)"
      R"({"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"w","arguments":"{}"}}]},)"
      R"({"role":"tool","tool_call_id":"call_1","content":"sunny"}],)"
      R"("tools":[{"type":"function","function":{"name":"w"}}],"tool_choice":"required",)"
      R"("chat_template_kwargs":{"enable_thinking":false}})");
  auto* g = std::get_if<generate_command>(&f);
  ASSERT_NE(g, nullptr) << std::get<protocol_error>(f).message;
  EXPECT_EQ(g->chat.tool_choice, tool_choice_mode::required);
  EXPECT_EQ(g->messages[2].tool_call_id, "call_1");
  EXPECT_FALSE(g->messages[1].tool_calls_json.empty());
  EXPECT_EQ(g->chat.template_kwargs_json, R"({"enable_thinking":false})");
}

TEST(ws_protocol, reasoning_tool_call_and_done_frames) {
  simdjson::dom::parser parser;
  token_event thought;
  thought.reasoning = "hmm";
  simdjson::dom::element e = parser.parse(encode_token_frame("r", thought));
  EXPECT_EQ(std::string_view(e["reasoning"]), "hmm");
  EXPECT_EQ(e["text"].error(), simdjson::NO_SUCH_FIELD);  // a frame of reasoning only
  token_event both{"answer", {5}, {}};
  both.reasoning = "r";
  e = parser.parse(encode_token_frame("r", both));
  EXPECT_EQ(std::string_view(e["text"]), "answer");
  EXPECT_EQ(std::string_view(e["reasoning"]), "r");
  const tool_call call{0, "call_q", "get_weather", R"({"city":"Oslo"})"};
  e = parser.parse(encode_tool_call_frame("r", call));
  EXPECT_EQ(std::string_view(e["type"]), "tool_call");
  EXPECT_EQ(std::string_view(e["id"]), "r");
  EXPECT_EQ(int64_t(e["index"]), 0);
  EXPECT_EQ(std::string_view(e["tool_call"]["function"]["name"]), "get_weather");
  final_event done;
  done.reason = finish_reason::stop;
  done.reasoning = "all of it";
  done.tool_calls.push_back(call);
  e = parser.parse(encode_done_frame("r", done));
  EXPECT_EQ(std::string_view(e["finish_reason"]), "tool_calls");
  EXPECT_EQ(std::string_view(e["reasoning"]), "all of it");
  EXPECT_EQ(std::string_view(e["tool_calls"].at(0)["id"]), "call_q");
  EXPECT_EQ(e["ignored_fields"].error(), simdjson::NO_SUCH_FIELD);
}

}  // namespace
}  // namespace pagedserve
