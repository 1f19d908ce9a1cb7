// Mixture-of-experts GGUF files served over HTTP: Qwen3-MoE, Qwen2-MoE (its shared expert beside the
// routed ones) and Mixtral (llama with experts), random Q4_K_M blocks as llama-quantize mixes them. The
// step groups its tokens per expert across every sequence in it, so concurrent streams share experts'
// weight reads; each stream's greedy completion must still be the one its prompt gets served alone.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "model/gguf_random_model.hpp"
#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"
#include "model/hf_test_model.hpp"
#include "support/test_paths.hpp"

namespace pagedserve::e2e {
namespace {

std::string completion(unsigned short port, const std::string& prompt) {
  http_conn c;
  if (!c.connect(port)) return "<no connection>";
  const std::string body = R"({"prompt":")" + prompt + R"(","max_tokens":12,"temperature":0,"ignore_eos":true})";
  if (!c.send(http_post_bytes("/v1/completions", body))) return "<not sent>";
  auto r = c.read_response(std::chrono::seconds(60));
  if (!r) return "<" + r.error() + ">";
  simdjson::dom::parser parser;
  std::string_view text;
  if (r->status != 200 || parser.parse(r->body)["choices"].at(0)["text"].get(text) != simdjson::SUCCESS)
    return "<" + std::to_string(r->status) + " " + r->body + ">";
  return std::string(text);
}

std::filesystem::path write_moe(const std::string& architecture) {
  model_config c;
  c.architecture = architecture;
  c.dim = 256, c.hidden_dim = 512, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 64;
  c.vocab_size = 512, c.seq_len = 256, c.shared_classifier = false, c.rope_theta = 10000.0f;
  c.n_experts = 8, c.n_experts_used = 2, c.expert_hidden_dim = 256;
  c.norm_topk_prob = architecture != "qwen2moe";
  if (architecture == "qwen2moe") c.shared_expert_hidden_dim = 512;
  gguf_writer w;
  gguf_add_random_model(w, c, *gguf_recipe_parse("Q4_K_M"), 31);
  gguf_add_synthetic_vocab(w, c.vocab_size);
  const auto path = test::temp_dir(architecture + "_moe_serve.gguf");
  auto r = w.write(path);
  EXPECT_TRUE(r.has_value()) << r.error();
  return path;
}

// The engine's forward passes so far (pagedserve:engine_steps_total, whatever its labels).
double engine_steps(unsigned short port) {
  http_conn c;
  if (!c.connect(port) || !c.send(http_get_bytes("/metrics"))) return -1;
  auto r = c.read_response(std::chrono::seconds(30));
  if (!r) return -1;
  for (const auto& [series, value] : parse_metrics(r->body))
    if (series.starts_with("pagedserve:engine_steps_total")) return value;
  return -1;
}

class moe_serve : public testing::TestWithParam<std::string> {};

TEST_P(moe_serve, concurrent_streams_get_the_completions_they_get_alone) {
  const auto path = write_moe(GetParam());
  server_process server({"--model", path.string(), "--tokenizer", ""});
  ASSERT_TRUE(server.ready()) << server.error();
  const std::vector<std::string> prompts = {"Once upon a time", "The quick brown fox", "1 2 3 4 5 6 7 8 9 10 11",
                                            "caf\xc3\xa9 au lait", "Experts route tokens", "zz"};
  std::vector<std::string> alone;
  for (const std::string& p : prompts) alone.push_back(completion(server.port(), p));
  const double steps_alone = engine_steps(server.port());
  std::vector<std::string> together(prompts.size());
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < prompts.size(); ++i)
    clients.emplace_back([&, i] { together[i] = completion(server.port(), prompts[i]); });
  for (std::thread& t : clients) t.join();
  // The streams did share steps: fewer forward passes than the same requests one after another.
  const double steps_together = engine_steps(server.port()) - steps_alone;
  std::printf("[ %s ] engine steps: %.0f one after another, %.0f together\n", GetParam().c_str(), steps_alone, steps_together);
  EXPECT_LT(steps_together, steps_alone);
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_FALSE(alone[i].empty() || alone[i].front() == '<') << alone[i];
    EXPECT_EQ(together[i], alone[i]) << prompts[i];
  }
  EXPECT_NE(server.log().find("8 experts"), std::string::npos) << server.log();
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(all, moe_serve, testing::Values("qwen3moe", "qwen2moe", "llama"),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param == "llama" ? std::string("mixtral") : info.param;
                         });

}  // namespace
}  // namespace pagedserve::e2e
