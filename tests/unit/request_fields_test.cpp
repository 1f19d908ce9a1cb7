// The sampling parameters mean the same on both protocols: each value a WebSocket `params` object
// accepts, an OpenAI body accepts with the same result, and each one rejects the other rejects too.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "api/openai_request.hpp"
#include "api/ws_protocol.hpp"

namespace pagedserve {
namespace {

const openai::parse_limits limits{512, 4, 8};

// One parameter as "key":value, through each parser; nullopt when it was rejected.
std::optional<sampling_params> via_ws(const std::string& field) {
  auto f = parse_client_frame(R"({"type":"generate","id":"r","prompt":"p","params":{)" + field + "}}");
  auto* g = std::get_if<generate_command>(&f);
  return g ? std::optional(g->params) : std::nullopt;
}

std::optional<sampling_params> via_openai(const std::string& field) {
  auto r = openai::parse_completion_request(R"({"prompt":"p",)" + field + "}", limits);
  return r ? std::optional(r->params) : std::nullopt;
}

void expect_same(const sampling_params& a, const sampling_params& b, const std::string& field) {
  EXPECT_EQ(a.temperature, b.temperature) << field;
  EXPECT_EQ(a.top_p, b.top_p) << field;
  EXPECT_EQ(a.top_k, b.top_k) << field;
  EXPECT_EQ(a.min_p, b.min_p) << field;
  EXPECT_EQ(a.presence_penalty, b.presence_penalty) << field;
  EXPECT_EQ(a.frequency_penalty, b.frequency_penalty) << field;
  EXPECT_EQ(a.repetition_penalty, b.repetition_penalty) << field;
  EXPECT_EQ(a.seed, b.seed) << field;
  EXPECT_EQ(a.stop, b.stop) << field;
  EXPECT_EQ(a.ignore_eos, b.ignore_eos) << field;
  EXPECT_EQ(a.cache_salt, b.cache_salt) << field;
}

TEST(request_fields, both_protocols_accept_the_same_values_with_the_same_meaning) {
  const std::vector<std::string> accepted = {
      R"("max_tokens":7)", R"("max_tokens":7.0)", R"("max_completion_tokens":9)", R"("temperature":0)",
      R"("temperature":1.5)", R"("top_p":1)", R"("top_p":0.25)", R"("top_k":-1)", R"("top_k":40)",
      R"("min_p":0.1)", R"("presence_penalty":-2)", R"("frequency_penalty":2)", R"("repetition_penalty":1.3)",
      R"("seed":-5)", R"("seed":9223372036854775807)", R"("stop":"x")", R"("stop":["a","bc"])",
      R"("ignore_eos":true)", R"("cache_salt":"tenant-1")"};
  for (const auto& field : accepted) {
    auto ws = via_ws(field);
    auto oa = via_openai(field);
    ASSERT_TRUE(ws.has_value()) << "WebSocket rejected " << field;
    ASSERT_TRUE(oa.has_value()) << "OpenAI rejected " << field;
    expect_same(*ws, *oa, field);
    if (field.starts_with(R"("max_)")) EXPECT_EQ(ws->max_tokens, oa->max_tokens) << field;
  }
  EXPECT_EQ(via_ws(R"("cache_salt":"s")")->cache_salt, "s");
  EXPECT_EQ(via_ws(R"("max_tokens":7.0)")->max_tokens, 7);
}

TEST(request_fields, both_protocols_reject_the_same_values) {
  const std::vector<std::string> rejected = {
      R"("max_tokens":0)", R"("max_tokens":2147483648)", R"("max_tokens":1.5)", R"("max_tokens":"5")",
      R"("temperature":-0.1)", R"("temperature":101)", R"("temperature":"hot")", R"("top_p":0)",
      R"("top_p":1.01)", R"("top_k":-2)", R"("top_k":16777217)", R"("min_p":1.5)",
      R"("presence_penalty":2.5)", R"("repetition_penalty":0)", R"("seed":1e300)",
      R"("seed":18446744073709551615)", R"("stop":[1])", R"("stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"])",
      R"("stop":"")", R"("ignore_eos":1)", R"("cache_salt":5)"};
  for (const auto& field : rejected) {
    EXPECT_FALSE(via_ws(field).has_value()) << "WebSocket accepted " << field;
    EXPECT_FALSE(via_openai(field).has_value()) << "OpenAI accepted " << field;
  }
}

TEST(request_fields, errors_keep_each_protocols_shape) {
  auto f = parse_client_frame(R"({"type":"generate","id":"r","prompt":"p","params":{"max_tokens":0}})");
  EXPECT_EQ(std::get<protocol_error>(f).code, "invalid_max_tokens");
  f = parse_client_frame(R"({"type":"generate","id":"r","prompt":"p","params":{"top_p":"x"}})");
  EXPECT_EQ(std::get<protocol_error>(f).code, "invalid_request");
  EXPECT_NE(std::get<protocol_error>(f).message.find("top_p"), std::string::npos);

  auto r = openai::parse_completion_request(R"({"prompt":"p","top_p":"x"})", limits);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().status, 400);
  EXPECT_EQ(r.error().param, "top_p");
  EXPECT_EQ(r.error().code, "invalid_type");
  r = openai::parse_completion_request(R"({"prompt":"p","temperature":500})", limits);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, "invalid_value");
}

}  // namespace
}  // namespace pagedserve
