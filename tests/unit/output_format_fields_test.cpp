// The structured-output request fields of every dialect (OpenAI, vLLM, llama.cpp) on both OpenAI
// endpoints and the WebSocket frame: what each sets, and the 400 naming a bad or unsupported one.
#include <gtest/gtest.h>

#include "api/openai_request.hpp"
#include "api/ws_protocol.hpp"

namespace pagedserve::openai {
namespace {

const parse_limits limits{512, 4, 8};
using kind = output_format::kind;

output_format chat_format(std::string_view fields) {
  auto r = parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],)" + std::string(fields) + "}", limits);
  EXPECT_TRUE(r) << r.error().message;
  return r ? r->params.format : output_format{};
}

api_error chat_error(std::string_view fields) {
  auto r = parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],)" + std::string(fields) + "}", limits);
  EXPECT_FALSE(r);
  return r ? api_error{} : r.error();
}

TEST(output_format_fields, openai_response_format) {
  EXPECT_EQ(chat_format(R"("response_format":{"type":"text"})").type, kind::none);
  EXPECT_EQ(chat_format(R"("response_format":{"type":"json_object"})").type, kind::json_object);
  const output_format f = chat_format(
      R"("response_format":{"type":"json_schema","json_schema":{"name":"n","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}}}}})");
  EXPECT_EQ(f.type, kind::json_schema);
  EXPECT_EQ(f.spec, R"({"type":"object","properties":{"a":{"type":"string"}}})");
  auto completion = parse_completion_request(R"({"prompt":"x","response_format":{"type":"json_object"}})", limits);
  ASSERT_TRUE(completion);
  EXPECT_EQ(completion->params.format.type, kind::json_object);
}

TEST(output_format_fields, vllm_and_llama_cpp_dialects) {
  EXPECT_EQ(chat_format(R"("structured_outputs":{"json":{"type":"integer"}})").type, kind::json_schema);
  EXPECT_EQ(chat_format(R"("structured_outputs":{"regex":"[a-z]+"})").type, kind::regex);
  EXPECT_EQ(chat_format(R"("structured_outputs":{"choice":["yes","no"]})").type, kind::grammar);
  EXPECT_EQ(chat_format(R"("guided_json":"{\"type\":\"string\"}")").type, kind::json_schema);
  EXPECT_EQ(chat_format(R"("guided_regex":"\\d+")").spec, "\\d+");
  EXPECT_EQ(chat_format(R"("guided_grammar":"root ::= \"a\"")").type, kind::grammar);
  EXPECT_EQ(chat_format(R"("guided_choice":["a","b\""])").spec, "root ::= \"a\" | \"b\\\"\"\n");
  EXPECT_EQ(chat_format(R"("grammar":"root ::= [0-9]")").type, kind::grammar);
  EXPECT_EQ(chat_format(R"("json_schema":{"type":"boolean"})").type, kind::json_schema);
}

TEST(output_format_fields, errors_name_the_field_and_the_problem) {
  const api_error unsupported = chat_error(
      R"("response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"array","uniqueItems":true}}})");
  EXPECT_EQ(unsupported.status, 400);
  EXPECT_EQ(unsupported.param, "response_format");
  EXPECT_NE(unsupported.message.find("unsupported JSON schema keyword 'uniqueItems'"), std::string::npos);
  EXPECT_NE(chat_error(R"("grammar":"root ::= (")").message.find("line 1, column 10"), std::string::npos);
  EXPECT_EQ(chat_error(R"x("guided_regex":"(?=a)")x").param, "guided_regex");
  EXPECT_EQ(chat_error(R"("response_format":{"type":"json_schema"})").param, "response_format");
  EXPECT_EQ(chat_error(R"("guided_choice":[])").param, "guided_choice");
  EXPECT_NE(chat_error(R"("guided_regex":"a","grammar":"root ::= \"a\"")").message.find("only one"), std::string::npos);
}

TEST(output_format_fields, websocket_params) {
  auto frame = parse_client_frame(
      R"({"type":"generate","id":"1","prompt":"x","params":{"response_format":{"type":"json_object"}}})");
  ASSERT_TRUE(std::holds_alternative<generate_command>(frame));
  EXPECT_EQ(std::get<generate_command>(frame).params.format.type, kind::json_object);
  auto bad = parse_client_frame(R"({"type":"generate","id":"1","prompt":"x","params":{"guided_json":{"not":{}}}})");
  ASSERT_TRUE(std::holds_alternative<protocol_error>(bad));
  EXPECT_NE(std::get<protocol_error>(bad).message.find("'not'"), std::string::npos);
}

}  // namespace
}  // namespace pagedserve::openai
