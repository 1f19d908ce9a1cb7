// --speculative-config end to end over real sockets: a server speculating with n-gram lookup streams
// the same greedy text as one that does not, for concurrent requests on one connection; the done
// frames count the proposals, /metrics carries vLLM's spec_decode counters; a server with a draft
// model (stories260K drafting for itself) streams the same text too; an unsupported method, a missing
// draft or a draft with another vocabulary is refused at start-up.
#include <gtest/gtest.h>

#include <unistd.h>

#include "pagedserve/model.hpp"
#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "e2e/stream_collector.hpp"

namespace pagedserve::e2e {
namespace {

const std::vector<std::pair<std::string, std::string>> prompts = {
    {"a", "Once upon a time, there was a little girl. Once upon a time, there was a little"},
    {"b", "Tom had a ball. Tom had a ball. Tom had"},
    {"c", "One day, Lily went to"}};

stream_collector run_requests(int port, int max_tokens) {
  ws_client client;
  const auto connected = client.connect(port);
  EXPECT_TRUE(connected) << connected.error();
  for (const auto& [id, prompt] : prompts) {
    const auto sent = client.send_text(generate_frame(id, prompt, max_tokens));
    EXPECT_TRUE(sent) << sent.error();
  }
  stream_collector frames;
  EXPECT_TRUE(read_until(
      client, frames,
      [&] { return std::all_of(prompts.begin(), prompts.end(), [&](const auto& r) { return frames.done(r.first); }); },
      std::chrono::seconds(30)));
  client.close();
  return frames;
}

TEST(speculative_decoding, ngram_server_streams_the_same_greedy_text_and_counts_proposals) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  server_process plain;
  ASSERT_TRUE(plain.ready()) << plain.error();
  const stream_collector want = run_requests(plain.port(), 120);

  server_process spec({"--speculative-config",
                       R"({"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4,"max_batch_rows":64})"});
  ASSERT_TRUE(spec.ready()) << spec.error();
  const stream_collector got = run_requests(spec.port(), 120);
  bool any_accepted = false;
  for (const auto& [id, prompt] : prompts) {
    SCOPED_TRACE(id);
    ASSERT_EQ(got[id].dones.size(), 1u);
    EXPECT_FALSE(want[id].text.empty());
    EXPECT_EQ(got[id].text, want[id].text);
    const std::string& done = got[id].dones.front().raw;
    any_accepted |= done.find(R"("spec_accepted_tokens":0)") == std::string::npos &&
                    done.find(R"("spec_accepted_tokens":)") != std::string::npos;
  }
  EXPECT_TRUE(any_accepted) << "no done frame reports an accepted proposal";
  const auto metrics = http_get(spec.port(), "/metrics");
  ASSERT_TRUE(metrics) << metrics.error();
  for (const char* name : {"pagedserve:spec_decode_num_drafts_total", "pagedserve:spec_decode_num_draft_tokens_total",
                           "pagedserve:spec_decode_num_accepted_tokens_total",
                           "pagedserve:spec_decode_num_accepted_tokens_per_pos_total{"})
    EXPECT_NE(metrics->body.find(name), std::string::npos) << name;
  EXPECT_NE(metrics->body.find(R"(position="1")"), std::string::npos) << metrics->body;
}

TEST(speculative_decoding, draft_model_server_streams_the_same_greedy_text) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  server_process plain;
  ASSERT_TRUE(plain.ready()) << plain.error();
  const stream_collector want = run_requests(plain.port(), 120);
  server_process spec({"--speculative-config", R"({"model":")" + model_path().string() +
                                                   R"(","num_speculative_tokens":4,"max_batch_rows":64})"});
  ASSERT_TRUE(spec.ready()) << spec.error();
  const stream_collector got = run_requests(spec.port(), 120);
  for (const auto& [id, prompt] : prompts) {
    SCOPED_TRACE(id);
    ASSERT_EQ(got[id].dones.size(), 1u);
    EXPECT_EQ(got[id].text, want[id].text);
    EXPECT_EQ(got[id].dones.front().raw.find(R"("spec_accepted_tokens":0)"), std::string::npos)
        << "a model drafting for itself has its proposals accepted";
  }
}

TEST(speculative_decoding, a_draft_model_with_another_vocabulary_is_refused_with_the_reason) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  model_config c;
  c.dim = 32, c.hidden_dim = 64, c.n_layers = 1, c.n_heads = 4, c.n_kv_heads = 4;
  c.vocab_size = 600, c.seq_len = 256, c.shared_classifier = true;
  const auto draft = std::filesystem::temp_directory_path() / ("pagedserve_draft_" + std::to_string(::getpid()) + ".bin");
  ASSERT_TRUE(llama2c_write_random(draft, c, 1).has_value());
  const process_result r = run_process({test::server_binary().string(), "serve", "--model", model_path().string(),
                                        "--tokenizer", tokenizer_path().string(), "--port", "0", "--speculative-config",
                                        R"({"model":")" + draft.string() + R"(","num_speculative_tokens":4})"},
                                       std::chrono::seconds(10));
  std::filesystem::remove(draft);
  EXPECT_TRUE(r.exited && r.exit_code != 0) << r.err;
  EXPECT_NE(r.err.find("speculative_config.model"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tokenizer"), std::string::npos) << r.err;
}

TEST(speculative_decoding, a_missing_draft_model_or_unknown_method_is_refused_at_start_up) {
  for (const char* config : {R"({"model":"draft.bin","num_speculative_tokens":4})", R"({"method":"eagle"})",
                             R"({"method":"ngram","num_speculative_tokens":0})", R"({"method":"ngram","bogus":1})"}) {
    SCOPED_TRACE(config);
    const process_result r = run_process({test::server_binary().string(), "serve", "--model", model_path().string(),
                                          "--tokenizer", tokenizer_path().string(), "--port", "0",
                                          "--speculative-config", config},
                                         std::chrono::seconds(5));
    EXPECT_TRUE(r.exited && r.exit_code != 0) << r.err;
    EXPECT_NE(r.err.find("speculative_config"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace pagedserve::e2e
