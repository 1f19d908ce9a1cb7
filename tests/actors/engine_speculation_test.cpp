// Speculative decoding (n-gram proposals) through the real engine on stories260K: greedy output is
// bit-identical to decoding without speculation, on the golden prompts and on random prompts, one
// request at a time and mixed with other concurrent requests; proposals were verified and accepted;
// the KV pool comes back whole.
#include <gtest/gtest.h>

#include <random>

#include "actors/engine_harness.hpp"
#include "model/generator.hpp"
#include "model/golden_support.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

using test::load_stories;

// The golden prompts' openings, and random ones of tokenizer pieces (a story repeated back and forth).
std::vector<std::string> test_prompts(const tokenizer& tok) {
  std::vector<std::string> prompts = {"Once upon a time", "One day, Lily", "The cat", "",
                                      "Tim and Sue went to the park. Tim and Sue went to the park. Tim and"};
  std::mt19937 rng(4);
  for (int i = 0; i < 6; ++i) {
    std::string p;
    const int n = std::uniform_int_distribution<int>(1, 24)(rng);
    for (int k = 0; k < n; ++k) p += tok.token_text(std::uniform_int_distribution<int>(3, 511)(rng));
    prompts.push_back(p + " " + p);
  }
  return prompts;
}

struct run_result {
  std::map<std::string, test::recorded_request> requests;
  std::uint64_t n_spec_accepted = 0;
};

// Runs every prompt, `concurrent` at a time, greedy, max_tokens 100 (stories260K often stops sooner).
run_result run_all(const test::loaded_model& s, const std::vector<std::string>& prompts, bool speculative, int concurrent,
                   int budget) {
  boost::asio::io_context io;
  engine_config cfg;
  cfg.kv_blocks = 128;
  cfg.block_size = 8;
  cfg.max_num_batched_tokens = budget;
  // A fixed bound of 64 rows: every sequence of the batch gets proposals, whatever the steps' timings.
  if (speculative) cfg.speculative = {"ngram", 5, 4, 1, "", 64};
  engine e(io.get_executor(), s.weights, s.vocabulary, cfg);
  e.kv_allocator().check_invariants_on_free(true);
  auto link = std::make_shared<test::recording_link>();
  sampling_params greedy;
  greedy.temperature = 0;
  greedy.max_tokens = 100;
  EXPECT_TRUE(test::run_in_waves(io, e, link, prompts, greedy, concurrent));
  run_result r{link->requests(), 0};
  for (const auto& [id, req] : r.requests) r.n_spec_accepted += req.spec_accepted_tokens;
  const engine_status st = test::status_of(io, e);
  EXPECT_EQ(st.kv.blocks_free, st.kv.blocks_total);
  return r;
}

TEST(engine_speculation, greedy_output_is_identical_with_and_without_ngram_speculation) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  const auto prompts = test_prompts(*s.vocabulary);
  const run_result plain = run_all(s, prompts, false, 1, 512);
  ASSERT_EQ(plain.requests.size(), prompts.size());
  for (const int concurrent : {1, 4, 11}) {     // alone, and mixed with other requests
    for (const int budget : {512, 9}) {         // and with prompts in chunks beside the verifications
      SCOPED_TRACE("concurrent " + std::to_string(concurrent) + ", budget " + std::to_string(budget));
      const run_result spec = run_all(s, prompts, true, concurrent, budget);
      for (std::size_t i = 0; i < prompts.size(); ++i) {
        SCOPED_TRACE(prompts[i]);
        const auto& want = plain.requests.at("r" + std::to_string(i));
        const auto& got = spec.requests.at("r" + std::to_string(i));
        EXPECT_EQ(got.ids, want.ids);
        EXPECT_EQ(got.finish_reason, want.finish_reason);
        EXPECT_EQ(got.n_final, 1);
      }
      EXPECT_GT(spec.n_spec_accepted, 0u) << "no proposal was ever accepted: speculation did not run";
    }
  }
}

// And the golden prompts' greedy generations (run.c's, which generate_sequence reproduces), speculating.
TEST(engine_speculation, golden_greedy_generations_with_speculation) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto cases = test::golden_stories260k();
  ASSERT_FALSE(cases.empty());
  const auto s = load_stories();
  const auto* kt = kernels::kernel_table_select();
  std::vector<std::string> prompts;
  for (const auto& c : cases) prompts.push_back(c.prompt);
  const run_result spec = run_all(s, prompts, true, 3, 512);
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    sampling_params greedy;
    greedy.temperature = 0;
    greedy.max_tokens = 100;
    const generation alone =
        generate_sequence(*s.weights, *s.vocabulary, *kt, s.vocabulary->encode(prompts[i], true), greedy, 0);
    EXPECT_EQ(spec.requests.at("r" + std::to_string(i)).ids, alone.generated) << prompts[i];
  }
}

}  // namespace
}  // namespace pagedserve
