// Request actors over the real engine: stop strings, seeded sampling, queue limits, context checks.
#include <gtest/gtest.h>

#include "actors/engine_harness.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

struct fixture {
  boost::asio::io_context io;
  std::unique_ptr<engine> e;
  std::shared_ptr<test::recording_link> link = std::make_shared<test::recording_link>();

  explicit fixture(engine_config cfg = {}) {
    if (cfg.kv_blocks == 0) cfg.kv_blocks = 1024;  // serve sizes the pool from free RAM (kv_pool_plan.hpp); a test names it
    auto m = llama2c_model_load(test::model_file("stories260K.bin"));
    auto t = llama2c_tokenizer_load(test::model_file("tok512.bin"), (*m)->config.vocab_size);
    e = std::make_unique<engine>(io.get_executor(), std::move(*m), std::shared_ptr<const tokenizer>(std::move(*t)), cfg);
  }
  std::map<std::string, test::recorded_request> run(int n_requests) {
    EXPECT_TRUE(test::run_until(io, [&] { return link->n_ended() == n_requests; }));
    return link->requests();
  }
};

sampling_params params(float temperature, int max_tokens) {
  sampling_params p;
  p.temperature = temperature;
  p.max_tokens = max_tokens;
  return p;
}

TEST(request_actor, stop_string_ends_the_stream_before_it_and_finishes_with_stop) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  fixture f;
  test::start_request(*f.e, f.link, "plain", "Once upon a time", params(0, 60));
  auto stopped = params(0, 60);
  stopped.stop = {"little girl", "never matches"};
  test::start_request(*f.e, f.link, "stopped", "Once upon a time", stopped);
  auto r = f.run(2);
  const std::string& full = r["plain"].text;
  ASSERT_NE(full.find("little girl"), std::string::npos);
  EXPECT_EQ(r["stopped"].text, full.substr(0, full.find("little girl")));
  EXPECT_EQ(r["stopped"].finish_reason, "stop");
  EXPECT_EQ(r["plain"].finish_reason, "length");
  const engine_status st = test::status_of(f.io, *f.e);
  EXPECT_EQ(st.kv.blocks_free, st.kv.blocks_total);
}

TEST(request_actor, same_seed_same_text_batched_or_not_and_different_seeds_differ) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  fixture f;
  auto seeded = [](std::uint64_t seed) {
    auto p = params(1.0f, 50);
    p.seed = seed;
    p.top_p = 0.95f;
    return p;
  };
  test::start_request(*f.e, f.link, "a", "One day", seeded(11));
  test::start_request(*f.e, f.link, "b", "One day", seeded(11));
  test::start_request(*f.e, f.link, "c", "One day", seeded(12));
  auto r = f.run(3);
  test::start_request(*f.e, f.link, "d", "One day", seeded(11));  // alone, later
  r = f.run(4);
  EXPECT_EQ(r["a"].ids, r["b"].ids);
  EXPECT_EQ(r["a"].ids, r["d"].ids);
  EXPECT_NE(r["a"].ids, r["c"].ids);
}

TEST(request_actor, context_and_max_tokens_limits_are_errors) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  fixture f;
  std::string long_prompt;
  for (int i = 0; i < 600; ++i) long_prompt += "Lily ";
  test::start_request(*f.e, f.link, "long", long_prompt, params(0, 5));
  test::start_request(*f.e, f.link, "many", "Hi", params(0, 600));
  test::start_request(*f.e, f.link, "fits", "Hi", params(0, 500));
  auto r = f.run(3);
  EXPECT_EQ(r["long"].error_code, "context_length_exceeded");
  EXPECT_EQ(r["many"].error_code, "invalid_max_tokens");
  EXPECT_EQ(r["fits"].n_final, 1);
  EXPECT_TRUE(r["fits"].error_code.empty());
}

// Shutdown's finish_all: running and queued requests end with its error (exactly one final each, the
// blocks freed), and a request submitted after it is refused with the same error.
TEST(request_actor, finish_all_ends_every_request_and_refuses_later_ones) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  engine_config cfg;
  cfg.max_num_seqs = 1;
  fixture f(cfg);
  auto long_run = params(0, 300);
  long_run.ignore_eos = true;
  for (int i = 0; i < 6; ++i) test::start_request(*f.e, f.link, "r" + std::to_string(i), "Once", long_run);
  ASSERT_TRUE(test::run_until(f.io, [&] { return !f.link->requests()["r0"].ids.empty(); }));
  f.e->end_all({engine_error::shutting_down, "the server is going away"});
  test::start_request(*f.e, f.link, "late", "Once", long_run);
  auto r = f.run(7);
  int ended = 0;
  for (const auto& [id, rec] : r) {
    EXPECT_EQ(rec.n_final, 1) << id;
    if (!rec.error_code.empty()) {
      EXPECT_EQ(rec.error_code, "shutting_down") << id;
      ++ended;
    } else {
      EXPECT_EQ(rec.finish_reason, "length") << id;
    }
  }
  EXPECT_EQ(r["late"].error_code, "shutting_down");
  EXPECT_GT(ended, 1);  // at least one queued request besides the late one
  const engine_status st = test::status_of(f.io, *f.e);
  EXPECT_EQ(st.kv.blocks_free, st.kv.blocks_total);
  EXPECT_EQ(st.scheduler.running + st.scheduler.waiting, 0);
}

TEST(request_actor, a_full_waiting_queue_rejects_with_queue_full) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  engine_config cfg;
  cfg.max_num_seqs = 1;
  cfg.max_waiting = 2;
  fixture f(cfg);
  for (int i = 0; i < 6; ++i) test::start_request(*f.e, f.link, "r" + std::to_string(i), "Once", params(0, 30));
  auto r = f.run(6);
  int rejected = 0, done = 0;
  for (const auto& [id, rec] : r) {
    EXPECT_EQ(rec.n_final, 1) << id;
    rejected += rec.error_code == "queue_full";
    done += rec.finish_reason == "length";
  }
  EXPECT_GT(rejected, 0);
  EXPECT_EQ(rejected + done, 6);
}

}  // namespace
}  // namespace pagedserve
