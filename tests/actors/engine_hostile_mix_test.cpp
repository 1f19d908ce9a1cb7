// A property of the whole engine (scheduler, KV allocator, executor, request actors): random request
// mixes with hostile members — max_tokens at and past the limits, prompts at the context's edge,
// n > 1 samples, cancels at random moments — over a KV pool smaller than the model's context never
// livelock (every request ends, once, within the deadline) and never leak a block.
#include <gtest/gtest.h>

#include <climits>
#include <random>
#include <set>

#include "actors/engine_harness.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

TEST(engine, hostile_mixes_over_a_pool_smaller_than_the_context_end_and_leak_nothing) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  auto m = llama2c_model_load(test::model_file("stories260K.bin"));
  auto t = llama2c_tokenizer_load(test::model_file("tok512.bin"), (*m)->config.vocab_size);
  ASSERT_TRUE(m && t);
  const std::shared_ptr<const tokenizer> vocabulary(std::move(*t));
  for (const int kv_blocks : {8, 20}) {  // 128 and 320 tokens of KV; the model's context is 512
    SCOPED_TRACE("kv_blocks " + std::to_string(kv_blocks));
    boost::asio::io_context io;
    engine_config cfg;
    cfg.kv_blocks = kv_blocks;
    cfg.max_num_seqs = 8;
    cfg.max_num_batched_tokens = 64;
    engine e(io.get_executor(), *m, vocabulary, cfg);
    e.kv_allocator().check_invariants_on_free(true);  // the whole pool, after every free
    const int context = e.max_sequence_tokens();
    ASSERT_EQ(context, kv_blocks * 16);
    auto link = std::make_shared<test::recording_link>();
    std::mt19937 rng(kv_blocks);
    std::vector<std::shared_ptr<request_actor>> actors;
    std::map<std::string, std::string> expected_error;  // requests that must be refused, and with what
    constexpr int n_requests = 150;
    for (int i = 0; i < n_requests; ++i) {
      const std::string id = "r" + std::to_string(i);
      sampling_params p;
      p.temperature = (rng() % 2) ? 0.0f : 1.0f;
      p.seed = i;
      p.ignore_eos = rng() % 2;
      std::string prompt;
      const int words = static_cast<int>(rng() % 5 == 0 ? context : rng() % 40);  // some far past the context
      for (int w = 0; w < words; ++w) prompt += "a ";
      switch (rng() % 5) {
        case 0: p.max_tokens = INT_MAX; break;      // past any context
        case 1: p.max_tokens = INT_MAX - 3; break;  // near overflow once the prompt is added
        case 2: p.max_tokens = 0; break;            // the rest of the context
        default: p.max_tokens = 1 + static_cast<int>(rng() % 64);
      }
      // Some requests are n = 3 samples of one prompt, submitted together as the HTTP API does.
      std::optional<sample_group> group;
      if (rng() % 6 == 0) group = sample_group{static_cast<std::uint64_t>(i), 3, std::make_shared<shared_prompt>()};
      for (int k = 0; k < (group ? group->size : 1); ++k) {
        const std::string member = group ? id + "/" + std::to_string(k) : id;
        sampling_params pk = p;
        *pk.seed += 1000 * k;
        if (p.max_tokens > context) expected_error[member] = "invalid_max_tokens";
        actors.push_back(test::start_request(e, link, member, prompt, pk, group));
      }
      io.restart();
      io.run_for(std::chrono::microseconds(rng() % 300));
      if (rng() % 5 == 0) actors[rng() % actors.size()]->tell(cancel_generation{});
    }
    // 3 s in Release, 47 s under TSan (TBB on one thread): the bound only catches a livelock.
    const int n_started = static_cast<int>(actors.size());
    ASSERT_TRUE(test::run_until(io, [&] { return link->n_ended() == n_started; }, std::chrono::seconds(300)))
        << link->n_ended() << " of " << n_started << " requests ended";
    std::set<std::string> codes;
    for (const auto& [id, r] : link->requests()) {
      EXPECT_EQ(r.n_final, 1) << id;
      if (auto it = expected_error.find(id); it != expected_error.end() && r.finish_reason != "cancelled") {
        EXPECT_TRUE(r.error_code == it->second || r.error_code == "context_length_exceeded") << id << ": " << r.error_code;
      }
      if (!r.error_code.empty()) codes.insert(r.error_code);
    }
    for (const auto& c : codes)
      EXPECT_TRUE(c == "invalid_max_tokens" || c == "context_length_exceeded" || c == "cancelled") << c;
    const engine_status st = test::status_of(io, e);
    EXPECT_EQ(st.kv.blocks_free, st.kv.blocks_total) << "blocks leaked";
    EXPECT_EQ(st.kv.sequences, 0);
    EXPECT_EQ(st.scheduler.running, 0);
    EXPECT_EQ(st.scheduler.waiting, 0);
  }
}

}  // namespace
}  // namespace pagedserve
