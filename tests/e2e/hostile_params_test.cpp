// Hostile sampling parameters over a real socket (issue 17 item 8): a logit_bias object repeating one
// key 130k times (each repeat was an entry the sampler added to every token's logits) is served as one
// entry, and more than 300 distinct tokens are refused naming logit_bias; a well-behaved WebSocket
// client beside it keeps being served (its latency printed, never asserted on).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <chrono>
#include <future>
#include <iostream>

#include "e2e/e2e_check.hpp"
#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"
#include "e2e/stream_collector.hpp"
#include "e2e/well_behaved_client.hpp"

namespace pagedserve::e2e {
namespace {

using namespace std::chrono_literals;

std::string logit_bias_body(int n_entries, bool distinct) {
  std::string body = R"({"prompt":"Once upon a time","max_tokens":16,"temperature":0,"logit_bias":{)";
  for (int i = 0; i < n_entries; ++i) body += (i ? ",\"" : "\"") + std::to_string(distinct ? i : 7) + "\":-1";
  return body + "}}";
}

TEST(hostile_params, repeated_logit_bias_keys_are_one_entry_and_300_tokens_the_most) {
  E2E_REQUIRE_MODEL();
  server_process server({"--max-body-bytes", "2000000"});
  ASSERT_TRUE(server.ready()) << server.error();
  const double alone = well_behaved_request_ms(server.port());
  auto hostile = std::async(std::launch::async, [&] {
    for (int i = 0; i < 4; ++i) {
      auto r = http_exchange(server.port(), http_post_bytes("/v1/completions", logit_bias_body(130000, false)), 60s);
      ASSERT_TRUE(r) << r.error();
      EXPECT_EQ(r->status, 200) << r->body.substr(0, 300);
    }
  });
  std::this_thread::sleep_for(50ms);
  const double beside = well_behaved_request_ms(server.port());
  hostile.get();
  std::cout << "logit_bias with 130000 repeated keys: well-behaved request " << alone << " ms alone, " << beside
            << " ms beside it\n";
  EXPECT_GT(alone, 0);
  EXPECT_GT(beside, 0);

  auto over = http_exchange(server.port(), http_post_bytes("/v1/completions", logit_bias_body(301, true)));
  ASSERT_TRUE(over) << over.error();
  EXPECT_EQ(over->status, 400) << over->body;
  simdjson::dom::parser p;
  std::string_view param;
  ASSERT_EQ(p.parse(over->body)["error"]["param"].get(param), simdjson::SUCCESS) << over->body;
  EXPECT_EQ(param, "logit_bias");
  auto at_limit = http_exchange(server.port(), http_post_bytes("/v1/completions", logit_bias_body(300, true)));
  ASSERT_TRUE(at_limit) << at_limit.error();
  EXPECT_EQ(at_limit->status, 200) << at_limit->body;
}

}  // namespace
}  // namespace pagedserve::e2e
