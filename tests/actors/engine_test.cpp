// The four actors together on stories260K: batched greedy output equals running alone, and the KV
// pool comes back whole after hundreds of random requests, cancellations and preemptions.
#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <random>
#include <set>

#include "actors/engine_harness.hpp"
#include "model/generator.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

using test::load_stories;

const std::vector<std::string> eight_prompts = {
    "Once upon a time", "One day, Lily", "Tim saw a café and a 🐶", "The cat",
    "", "A big red ball was in the park and", "Sue and Ben liked to", "Mom said"};

sampling_params greedy(int max_tokens) {
  sampling_params p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  return p;
}

TEST(engine, eight_prompts_batched_equal_each_alone) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  for (int chunk_budget : {512, 7}) {  // whole prompts in one step, and prompts split into chunks
    SCOPED_TRACE("max_num_batched_tokens " + std::to_string(chunk_budget));
    boost::asio::io_context io;
    engine_config cfg;
    cfg.kv_blocks = 256;
    cfg.max_num_batched_tokens = chunk_budget;
    engine e(io.get_executor(), s.weights, s.vocabulary, cfg);
    e.kv_allocator().check_invariants_on_free(true);  // the whole pool, after every free
    auto link = std::make_shared<test::recording_link>();
    for (std::size_t i = 0; i < eight_prompts.size(); ++i)
      test::start_request(e, link, "r" + std::to_string(i), eight_prompts[i], greedy(80));
    ASSERT_TRUE(test::run_until(io, [&] { return link->n_ended() == 8; }));
    const auto got = link->requests();
    const auto* kt = kernels::kernel_table_select(cfg.kernels);
    for (std::size_t i = 0; i < eight_prompts.size(); ++i) {
      SCOPED_TRACE(eight_prompts[i]);
      const auto prompt = s.vocabulary->encode(eight_prompts[i], true);
      const generation alone = generate_sequence(*s.weights, *s.vocabulary, *kt, prompt, greedy(80), 0);
      const auto& r = got.at("r" + std::to_string(i));
      EXPECT_EQ(r.ids, alone.generated);
      EXPECT_EQ(r.n_final, 1);
    }
    const engine_status st = test::status_of(io, e);
    EXPECT_EQ(st.kv.blocks_free, st.kv.blocks_total);
  }
}

// /health and /metrics read the engine's figures while the engine thread may be deep in a long step
// (a prefill chunk of a large model takes seconds): report_status answers at once from what the
// scheduler and the allocator last published, and those figures are the settled ones after a request.
TEST(engine, status_is_answered_while_the_engine_thread_is_busy) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  boost::asio::io_context io;
  engine_config cfg;
  cfg.kv_blocks = 64;
  engine e(io.get_executor(), s.weights, s.vocabulary, cfg);
  auto link = std::make_shared<test::recording_link>();
  test::start_request(e, link, "r0", "Once upon a time", greedy(20));
  ASSERT_TRUE(test::run_until(io, [&] { return link->n_ended() == 1; }));

  // Hold the engine thread (the scheduler's strand runs on it, as do the allocator and the executor).
  std::promise<void> release;
  std::promise<void> holding;
  boost::asio::post(e.scheduler().strand(), [&, gate = release.get_future().share()] {
    holding.set_value();
    gate.wait();
  });
  holding.get_future().wait();
  std::optional<engine_status> got;
  e.report_status([&](engine_status st) { got = st; });
  release.set_value();
  ASSERT_TRUE(got.has_value()) << "report_status waited for the engine thread";
  EXPECT_EQ(got->kv.blocks_free, got->kv.blocks_total);
  EXPECT_EQ(got->kv.blocks_total, 64);
  EXPECT_EQ(got->scheduler.running, 0);
  EXPECT_EQ(got->scheduler.waiting, 0);
  EXPECT_GT(got->scheduler.steps, 0u);
}

// With an fp16, q8 or fp8 K/V cache (--kv-cache-dtype f16, q8, fp8, fp8_e5m2) a request's greedy output
// is still the same batched with others and chunked as run alone in its own engine.
TEST(engine, fp16_q8_and_fp8_kv_cache_batched_and_chunked_equals_each_alone) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  for (const char* kv_type : {"f16", "q8", "fp8", "fp8_e5m2"}) {
    SCOPED_TRACE(kv_type);
    auto run = [&](const std::vector<std::string>& prompts, int chunk_budget) {
      boost::asio::io_context io;
      engine_config cfg;
      cfg.kv_blocks = 256;
      cfg.max_num_batched_tokens = chunk_budget;
      cfg.kv_cache_dtype = kv_type;
      engine e(io.get_executor(), s.weights, s.vocabulary, cfg);
      auto link = std::make_shared<test::recording_link>();
      for (std::size_t i = 0; i < prompts.size(); ++i)
        test::start_request(e, link, "r" + std::to_string(i), prompts[i], greedy(80));
      EXPECT_TRUE(test::run_until(io, [&] { return link->n_ended() == static_cast<int>(prompts.size()); }));
      std::vector<std::vector<token_id>> ids;
      const auto got = link->requests();
      for (std::size_t i = 0; i < prompts.size(); ++i) ids.push_back(got.at("r" + std::to_string(i)).ids);
      return ids;
    };
    const auto batched = run(eight_prompts, 7);
    for (std::size_t i = 0; i < eight_prompts.size(); ++i) {
      SCOPED_TRACE(eight_prompts[i]);
      const auto alone = run({eight_prompts[i]}, 512);
      ASSERT_EQ(alone.size(), 1u);
      EXPECT_EQ(batched[i], alone[0]);
      EXPECT_FALSE(alone[0].empty());
    }
  }
}

TEST(engine, kv_pool_is_whole_after_500_random_requests_with_cancels_and_preemption) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  boost::asio::io_context io;
  engine_config cfg;
  cfg.kv_blocks = 40;  // 640 tokens: far fewer than the load wants, so sequences get preempted
  cfg.max_num_seqs = 16;
  cfg.max_num_batched_tokens = 64;
  cfg.max_waiting_per_client = cfg.max_waiting;  // one link is one client, queueing up to 500 requests
  engine e(io.get_executor(), s.weights, s.vocabulary, cfg);
  auto link = std::make_shared<test::recording_link>();
  std::mt19937 rng(1234);
  const std::vector<std::string> words = {"Once", "upon", "a", "time", "Lily", "the", "park", "ball", "and", "dog"};
  std::vector<std::shared_ptr<request_actor>> actors;
  constexpr int n_requests = 500;
  int n_cancel_sent = 0;
  std::string last_prompt;
  for (int i = 0; i < n_requests; ++i) {
    std::string prompt;
    for (int w = std::uniform_int_distribution<int>(0, 60)(rng); w > 0; --w) prompt += words[rng() % words.size()] + " ";
    sampling_params p;
    p.temperature = (rng() % 2) ? 0.0f : 0.9f;
    p.top_k = 40;
    p.seed = i;
    p.max_tokens = std::uniform_int_distribution<int>(1, 120)(rng);
    // Every fifth request is one of three samples of its prompt (forks sharing its blocks).
    std::optional<sample_group> group;
    if (i % 5 >= 2) group = sample_group{static_cast<std::uint64_t>(i / 5), 3, nullptr};
    if (i % 5 >= 3) prompt = last_prompt;
    last_prompt = prompt;
    actors.push_back(test::start_request(e, link, "r" + std::to_string(i), prompt, p, group));
    // Let the engine run a little between arrivals, and cancel some requests at random moments.
    io.restart();
    io.run_for(std::chrono::microseconds(rng() % 400));
    if (rng() % 4 == 0) {
      actors[rng() % actors.size()]->tell(cancel_generation{});
      ++n_cancel_sent;
    }
  }
  ASSERT_TRUE(test::run_until(io, [&] { return link->n_ended() == n_requests; }, std::chrono::seconds(120)));
  int n_cancelled = 0;
  for (const auto& [id, r] : link->requests()) {
    EXPECT_EQ(r.n_final, 1) << id;
    EXPECT_TRUE(r.error_code.empty()) << id << ": " << r.error_code;
    n_cancelled += r.finish_reason == "cancelled";
  }
  const engine_status st = test::status_of(io, e);
  EXPECT_EQ(st.kv.blocks_free, st.kv.blocks_total);
  EXPECT_EQ(st.kv.sequences, 0);
  EXPECT_EQ(st.scheduler.running, 0);
  EXPECT_EQ(st.scheduler.waiting, 0);
  EXPECT_GT(st.scheduler.preemptions, 0u) << "the pool was meant to be too small to avoid preemption";
  EXPECT_GT(st.kv.forks, 0u);
  EXPECT_GT(st.kv.block_copies, 0u);
  EXPECT_GT(n_cancelled, 0) << n_cancel_sent << " cancels sent";
}
}  // namespace
}  // namespace pagedserve

namespace pagedserve {
namespace {

// A KV pool far too small for the load: sequences are preempted and recomputed, yet every one of 64
// greedy requests ends with exactly the ids it produces alone.
TEST(engine, a_tiny_kv_pool_preempts_and_every_one_of_64_requests_is_still_correct) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  boost::asio::io_context io;
  engine_config cfg;
  cfg.kv_blocks = 24;  // 384 tokens for 64 requests of up to ~90 tokens each
  cfg.max_num_seqs = 32;
  cfg.max_num_batched_tokens = 48;
  engine e(io.get_executor(), s.weights, s.vocabulary, cfg);
  auto link = std::make_shared<test::recording_link>();
  std::vector<std::string> prompts;
  for (int i = 0; i < 64; ++i) prompts.push_back(eight_prompts[i % 8] + std::string(i / 8, ' ') + std::to_string(i));
  for (int i = 0; i < 64; ++i) test::start_request(e, link, "r" + std::to_string(i), prompts[i], greedy(40 + i % 30));
  ASSERT_TRUE(test::run_until(io, [&] { return link->n_ended() == 64; }, std::chrono::seconds(120)));
  const auto got = link->requests();
  const auto* kt = kernels::kernel_table_select(cfg.kernels);
  for (int i = 0; i < 64; ++i) {
    const auto prompt = s.vocabulary->encode(prompts[i], true);
    const generation alone = generate_sequence(*s.weights, *s.vocabulary, *kt, prompt, greedy(40 + i % 30), 0);
    const auto& r = got.at("r" + std::to_string(i));
    EXPECT_EQ(r.ids, alone.generated) << prompts[i];
    EXPECT_EQ(r.n_final, 1);
  }
  const engine_status st = test::status_of(io, e);
  EXPECT_GT(st.scheduler.preemptions, 0u) << "the pool was meant to force preemption";
  EXPECT_EQ(st.kv.blocks_free, st.kv.blocks_total);
}

TEST(engine, prefix_cache_hits_give_the_same_greedy_ids_as_computing_alone) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  boost::asio::io_context io;
  engine_config cfg;
  cfg.kv_blocks = 128;
  cfg.max_num_batched_tokens = 37;  // prompts split into odd chunks
  engine e(io.get_executor(), s.weights, s.vocabulary, cfg);
  auto link = std::make_shared<test::recording_link>();
  const std::string system = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park "
                             "with her friends and her dog. One day, ";
  const std::vector<std::string> tails = {"she saw", "Lily and Ben", "the dog", "a big bird", "Mom said"};
  // The first request warms the cache; the rest arrive after it finished and reuse its blocks.
  test::start_request(e, link, "warm", system + tails[0], greedy(30));
  ASSERT_TRUE(test::run_until(io, [&] { return link->n_ended() == 1; }));
  for (std::size_t i = 1; i < tails.size(); ++i) test::start_request(e, link, "r" + std::to_string(i), system + tails[i], greedy(30));
  ASSERT_TRUE(test::run_until(io, [&] { return link->n_ended() == static_cast<int>(tails.size()); }));
  const auto got = link->requests();
  const auto* kt = kernels::kernel_table_select(cfg.kernels);
  for (std::size_t i = 0; i < tails.size(); ++i) {
    const auto prompt = s.vocabulary->encode(system + tails[i], true);
    const generation alone = generate_sequence(*s.weights, *s.vocabulary, *kt, prompt, greedy(30), 0);
    EXPECT_EQ(got.at(i == 0 ? "warm" : "r" + std::to_string(i)).ids, alone.generated) << tails[i];
  }
  const engine_status st = test::status_of(io, e);
  EXPECT_GE(st.kv.prefix_cache_hits, 4u * 32u) << "each later prompt shares at least two 16-token blocks";
  EXPECT_GT(st.kv.blocks_cached, 0);
  EXPECT_EQ(st.kv.blocks_free, st.kv.blocks_total);
}

// n samples of one prompt (OpenAI n > 1): each sample equals the same seeded request run alone, while
// the samples share the prompt's blocks (forks) and copy only the block they write into.
TEST(engine, parallel_samples_share_the_prompt_blocks_and_each_equals_its_seed_alone) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  const auto text = s.vocabulary->encode(
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
      "friends and her dog. One day, she saw a big red ball",
      true);
  ASSERT_GT(text.size(), 40u);
  constexpr int n = 4;
  for (int n_prompt : {32, 37}) {      // the prompt ends on a block boundary, and inside a block
    for (int chunk_budget : {512, 7}) {  // prompt in one step, and in chunks the samples wait for
      SCOPED_TRACE("prompt " + std::to_string(n_prompt) + " budget " + std::to_string(chunk_budget));
      boost::asio::io_context io;
      engine_config cfg;
      cfg.kv_blocks = 64;
      cfg.max_num_batched_tokens = chunk_budget;
      engine e(io.get_executor(), s.weights, s.vocabulary, cfg);
      auto link = std::make_shared<test::recording_link>();
      const std::vector<token_id> prompt(text.begin(), text.begin() + n_prompt);
      const sample_group group{12345, n, nullptr};
      std::vector<std::shared_ptr<request_actor>> actors;
      for (int i = 0; i < n; ++i) {
        generate_command g;
        g.id = "s" + std::to_string(i);
        g.prompt_ids = prompt;
        g.params.temperature = 0.9f;
        g.params.max_tokens = 40;
        g.params.seed = 7 + i;
        g.group = group;
        std::shared_ptr<client_link> request_link = link->for_request(g.id);
        actors.push_back(std::make_shared<request_actor>(e.executor(), e, std::move(request_link), std::move(g)));
      }
      for (auto& a : actors) a->tell(start_generation{});
      ASSERT_TRUE(test::run_until(io, [&] { return link->n_ended() == n; }));
      const auto got = link->requests();
      const auto* kt = kernels::kernel_table_select(cfg.kernels);
      std::set<std::vector<token_id>> distinct;
      for (int i = 0; i < n; ++i) {
        sampling_params p;
        p.temperature = 0.9f;
        p.max_tokens = 40;
        p.seed = 7 + i;
        const generation alone = generate_sequence(*s.weights, *s.vocabulary, *kt, prompt, p, 7 + i);
        const auto& r = got.at("s" + std::to_string(i));
        EXPECT_EQ(r.ids, alone.generated) << "sample " << i;
        EXPECT_EQ(r.n_final, 1);
        distinct.insert(r.ids);
      }
      EXPECT_GT(distinct.size(), 1u) << "different seeds should give different samples";
      const engine_status st = test::status_of(io, e);
      EXPECT_EQ(st.kv.forks, static_cast<std::uint64_t>(n - 1));
      // Every fork copies the block holding the prompt's last token; the first sample keeps its own
      // unless it wrote there after all forks had copied.
      EXPECT_GE(st.kv.block_copies, static_cast<std::uint64_t>(n - 1));
      EXPECT_LE(st.kv.block_copies, static_cast<std::uint64_t>(n));
      EXPECT_EQ(st.kv.blocks_free, st.kv.blocks_total);
    }
  }
}

}  // namespace
}  // namespace pagedserve
