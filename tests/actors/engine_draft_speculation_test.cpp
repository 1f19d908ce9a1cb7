// Speculative decoding with a draft model through the real engine: greedy output is bit-identical to
// decoding without speculation, one request at a time and mixed with others (prompts in chunks beside
// the verifications), for stories260K drafting for itself (every proposal accepted) and for random-
// weight pairs written here with one vocabulary (the draft = the target's weights with noise, so
// proposals are partly rejected); with cancels and preemption over a small pool, the KV pool's
// invariants hold at every step and the pool comes back whole. Past the knee the draft stops
// mirroring a sequence (it lapses): the output stays the target's, and a prefix-cache hit on blocks
// a lapsed sequence wrote starts lapsed.
#include <gtest/gtest.h>

#include <random>

#include "actors/engine_harness.hpp"

namespace pagedserve {
namespace {

using test::load_stories;

std::vector<std::string> test_prompts(const tokenizer& tok, int n_random) {
  std::vector<std::string> prompts = {"Once upon a time", "One day, Lily", "The cat", "",
                                      "Tim and Sue went to the park. Tim and Sue went to the park. Tim and"};
  std::mt19937 rng(5);
  for (int i = 0; i < n_random; ++i) {
    std::string p;
    const int n = std::uniform_int_distribution<int>(1, 30)(rng);
    for (int k = 0; k < n; ++k) p += tok.token_text(std::uniform_int_distribution<int>(3, 511)(rng));
    prompts.push_back(p);
  }
  return prompts;
}

// A random-weight Llama over stories260K's vocabulary; with noise > 0, the same weights (seed) with
// N(0, noise) added to every tensor: a draft that agrees with the target less as noise grows.
std::shared_ptr<const model> random_llama(std::uint64_t seed, float noise) {
  model_config c;
  c.dim = 64, c.hidden_dim = 128, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2;
  c.vocab_size = 512, c.seq_len = 512, c.shared_classifier = true;
  std::vector<float> words = llama2c_random_checkpoint(c, seed, 0.3f);
  std::mt19937 rng(static_cast<unsigned>(seed + 1000));
  std::normal_distribution<float> n01(0.0f, noise);
  if (noise > 0)
    for (std::size_t i = 7; i < words.size(); ++i) words[i] += n01(rng);  // past the 7-word header
  auto m = llama2c_model_from_floats(std::move(words), "random");
  EXPECT_TRUE(m.has_value());
  return *m;
}

struct run_result {
  std::map<std::string, test::recorded_request> requests;
  std::uint64_t n_spec_accepted = 0, n_spec_drafted = 0;
};

// Every prompt, `concurrent` at a time, max_tokens 80, greedy unless a temperature is given; with a
// draft model when given one. The engine's status after the run (preemptions, prefix-cache hits) goes
// to *status when asked.
run_result run_all(std::shared_ptr<const model> target, std::shared_ptr<const tokenizer> tok,
                   std::shared_ptr<const model> draft, const std::vector<std::string>& prompts, int concurrent,
                   int budget, int kv_blocks = 128, engine_status* status = nullptr, float temperature = 0) {
  boost::asio::io_context io;
  engine_config cfg;
  cfg.kv_blocks = kv_blocks;
  cfg.block_size = 8;
  cfg.max_num_batched_tokens = budget;
  if (draft) cfg.speculative = {"draft_model", 4, 4, 1, "draft", 64};
  engine e(io.get_executor(), target, tok, cfg, nullptr, draft);
  e.kv_allocator().check_invariants_on_free(true);
  auto link = std::make_shared<test::recording_link>();
  sampling_params greedy;
  greedy.temperature = temperature;
  greedy.max_tokens = 80;
  EXPECT_TRUE(test::run_in_waves(io, e, link, prompts, greedy, concurrent));
  run_result r{link->requests(), 0, 0};
  for (const auto& [id, req] : r.requests) {
    r.n_spec_accepted += req.spec_accepted_tokens;
    r.n_spec_drafted += req.spec_draft_tokens;
  }
  const engine_status st = test::status_of(io, e);
  EXPECT_EQ(st.kv.blocks_free, st.kv.blocks_total);
  if (status) *status = st;
  return r;
}

void expect_same_outputs(const run_result& want, const run_result& got, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    SCOPED_TRACE("r" + std::to_string(i));
    const auto& w = want.requests.at("r" + std::to_string(i));
    const auto& g = got.requests.at("r" + std::to_string(i));
    EXPECT_EQ(g.ids, w.ids);
    EXPECT_EQ(g.finish_reason, w.finish_reason);
    EXPECT_EQ(g.n_final, 1);
  }
}

TEST(engine_draft_speculation, stories260k_drafting_for_itself_gives_the_same_greedy_output) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  const auto prompts = test_prompts(*s.vocabulary, 5);
  const run_result plain = run_all(s.weights, s.vocabulary, nullptr, prompts, 1, 512);
  for (const int concurrent : {1, 5}) {
    for (const int budget : {512, 9}) {
      SCOPED_TRACE("concurrent " + std::to_string(concurrent) + ", budget " + std::to_string(budget));
      const run_result spec = run_all(s.weights, s.vocabulary, s.weights, prompts, concurrent, budget);
      expect_same_outputs(plain, spec, prompts.size());
      // The draft's K/V are the target's (same weights, batch-invariant forward) wherever it reads them,
      // so every proposal is the target's own greedy choice.
      EXPECT_GT(spec.n_spec_drafted, 100u);
      EXPECT_EQ(spec.n_spec_accepted, spec.n_spec_drafted) << "a model drafting for itself had proposals rejected";
    }
  }
  // Every prompt twice (prefix-cache hits on blocks the first computed) in a pool of 24 blocks of 8
  // tokens that 6 running sequences overflow (preemption, recompute): the draft's K/V are still the
  // target's wherever it reads them.
  std::vector<std::string> twice = prompts;
  twice.insert(twice.end(), prompts.begin(), prompts.end());
  engine_status st;
  const run_result cached = run_all(s.weights, s.vocabulary, s.weights, twice, 6, 16, 24, &st);
  EXPECT_GT(st.scheduler.preemptions, 0u);
  EXPECT_GT(st.kv.prefix_cache_hits, 0u);
  for (std::size_t i = 0; i < twice.size(); ++i)
    EXPECT_EQ(cached.requests.at("r" + std::to_string(i)).ids, plain.requests.at("r" + std::to_string(i % prompts.size())).ids);
  EXPECT_GT(cached.n_spec_drafted, 100u);
  EXPECT_EQ(cached.n_spec_accepted, cached.n_spec_drafted);
}

// Sampled drafts: a model drafting for itself at the request's temperature (no other sampling knob)
// draws each proposal from q = p, so speculative sampling accepts it with probability min(1, p/q) = 1.
// A proposal verified against another position's q, or a q that is not what the draft drew from,
// would be rejected often.
TEST(engine_draft_speculation, sampled_proposals_of_a_model_drafting_for_itself_are_all_accepted) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  const auto prompts = test_prompts(*s.vocabulary, 5);
  const run_result spec = run_all(s.weights, s.vocabulary, s.weights, prompts, 5, 512, 128, nullptr, 0.8f);
  EXPECT_GT(spec.n_spec_drafted, 100u);
  // p and q are one softmax computed twice (float against double): p/q may fall a hair below 1.
  EXPECT_GE(spec.n_spec_accepted + 2, spec.n_spec_drafted);
}

TEST(engine_draft_speculation, a_noisy_random_weight_draft_gives_the_target_greedy_output) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  const auto target = random_llama(7, 0), draft = random_llama(7, 0.02f);
  const auto prompts = test_prompts(*s.vocabulary, 7);
  const run_result plain = run_all(target, s.vocabulary, nullptr, prompts, 1, 512);
  for (const int concurrent : {1, 6}) {
    SCOPED_TRACE("concurrent " + std::to_string(concurrent));
    // 24 blocks of 8 tokens: 6 sequences of up to ~110 tokens preempt each other.
    const run_result spec = run_all(target, s.vocabulary, draft, prompts, concurrent, 16, 24);
    expect_same_outputs(plain, spec, prompts.size());
    int n_generated = 0;
    for (const auto& [id, r] : spec.requests) n_generated += r.completion_tokens;
    EXPECT_GT(spec.n_spec_accepted, 0u) << n_generated << " tokens generated";
  }
}

// stories260K drafting for itself (every proposal accepted wherever the draft's K/V are valid) with
// blocks of 8 tokens and proposals only while a step holds at most 8 rows: one decoding sequence gets
// 4 proposals, two get 3 each, five get none (past the knee: the draft stops mirroring them, for good).
struct lapse_rig {
  lapse_rig(const test::loaded_model& s, bool with_draft) {
    engine_config cfg;
    cfg.kv_blocks = 512;  // no preemption, no eviction: every prompt's blocks stay cached
    cfg.block_size = 8;
    if (with_draft) cfg.speculative = {"draft_model", 4, 4, 1, "draft", 8};
    e = std::make_unique<engine>(io.get_executor(), s.weights, s.vocabulary, cfg, nullptr,
                                 with_draft ? s.weights : nullptr);
    e->kv_allocator().check_invariants_every_step(true);
  }
  void start(const std::string& id, const std::string& prompt, int max_tokens) {
    sampling_params p;
    p.temperature = 0;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;  // every request runs its max_tokens
    test::start_request(*e, link, id, prompt, p);
  }
  test::recorded_request request(const std::string& id) { return link->requests()[id]; }
  bool run_until_ended(int n) { return test::run_until(io, [&] { return link->n_ended() == n; }); }

  boost::asio::io_context io;
  std::shared_ptr<test::recording_link> link = std::make_shared<test::recording_link>();
  std::unique_ptr<engine> e;
};

// r0 decodes alone with proposals, then four requests join: past the knee r0 lapses, and once they
// are gone it stays without proposals (its draft K/V have gaps), its output the target's throughout.
// Returns how many tokens r0 had when it was alone again.
int run_lapse_mid_way(lapse_rig& rig) {
  rig.start("r0", "Once upon a time", 400);
  EXPECT_TRUE(test::run_until(rig.io, [&] { return rig.request("r0").ids.size() >= 8; }));
  const char* others[] = {"One day, Lily", "The cat", "Tim and Sue went to the park.", "A big dog"};
  for (int i = 0; i < 4; ++i) rig.start("r" + std::to_string(i + 1), others[i], 40);
  EXPECT_TRUE(rig.run_until_ended(4));  // the four others, shorter than r0
  const int n_alone = static_cast<int>(rig.request("r0").ids.size());
  EXPECT_TRUE(rig.run_until_ended(5));
  return n_alone;
}

TEST(engine_draft_speculation, a_sequence_lapses_mid_way_when_others_join_and_keeps_the_greedy_output) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  lapse_rig plain(s, false), spec(s, true);
  run_lapse_mid_way(plain);
  const int n_alone = run_lapse_mid_way(spec);
  for (int i = 0; i < 5; ++i) {
    const std::string id = "r" + std::to_string(i);
    EXPECT_EQ(spec.request(id).ids, plain.request(id).ids) << id;
  }
  const test::recorded_request r0 = spec.request("r0");
  EXPECT_EQ(r0.completion_tokens, 400);
  ASSERT_LE(n_alone, 360) << "r0 was alone again too late to tell";
  EXPECT_GT(r0.spec_draft_tokens, 0);
  EXPECT_EQ(r0.spec_accepted_tokens, r0.spec_draft_tokens);
  // Every proposal (all accepted: each one a token) before r0 was alone again, bar one step in flight;
  // alone, not lapsed, it would propose 4 per step for its last 40+ tokens.
  EXPECT_LE(r0.spec_draft_tokens, n_alone + 4) << n_alone;
}

// Prompts whose blocks are cached by a sequence the draft did not mirror (admitted past the knee)
// lack the block manager's draft K/V mark: a later request reusing them starts lapsed and proposes
// nothing (the draft would read K/V it never wrote). Blocks cached by a mirrored sequence carry the
// mark, and a request reusing them proposes with the draft's cached K/V, every proposal accepted.
void run_prefix_hits(lapse_rig& rig) {
  const std::string lapsed_prompt = "Tim and Sue went to the park. Tim and Sue went to the park. Tim and Sue played.";
  const std::string mirrored_prompt = "Sam had a red ball. He threw the ball to his friend Max in the big green garden.";
  const char* fillers[] = {"One day", "The cat", "A big dog", "Once upon a time", "Lily"};
  for (int i = 0; i < 5; ++i) rig.start("f" + std::to_string(i), fillers[i], 300);  // running while x starts
  EXPECT_TRUE(test::run_until(rig.io, [&] {
    for (int i = 0; i < 5; ++i)
      if (rig.request("f" + std::to_string(i)).ids.size() < 2) return false;
    return true;
  }));
  rig.start("x", lapsed_prompt, 8);  // admitted while five decode: lapsed from its first row
  EXPECT_TRUE(rig.run_until_ended(6));
  rig.start("y", lapsed_prompt, 40);
  EXPECT_TRUE(rig.run_until_ended(7));
  rig.start("z", mirrored_prompt, 8);
  EXPECT_TRUE(rig.run_until_ended(8));
  rig.start("w", mirrored_prompt, 40);
  EXPECT_TRUE(rig.run_until_ended(9));
}

TEST(engine_draft_speculation, a_prefix_hit_on_blocks_a_lapsed_sequence_wrote_starts_lapsed) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  lapse_rig plain(s, false), spec(s, true);
  run_prefix_hits(plain);
  run_prefix_hits(spec);
  for (const char* id : {"f0", "f1", "f2", "f3", "f4", "x", "y", "z", "w"})
    EXPECT_EQ(spec.request(id).ids, plain.request(id).ids) << id;
  const engine_status st = test::status_of(spec.io, *spec.e);
  EXPECT_GE(st.kv.prefix_cache_hits, 2u * 3 * 8) << "y and w reuse at least 3 blocks of their prompts";
  EXPECT_EQ(st.kv.blocks_free, st.kv.blocks_total);
  EXPECT_EQ(spec.request("x").spec_draft_tokens, 0);
  EXPECT_EQ(spec.request("y").spec_draft_tokens, 0) << "proposals read from draft K/V nobody wrote";
  const test::recorded_request w = spec.request("w");
  EXPECT_GT(w.spec_draft_tokens, 0);
  EXPECT_EQ(w.spec_accepted_tokens, w.spec_draft_tokens);
}

TEST(engine_draft_speculation, random_requests_with_cancels_keep_the_pool_sound) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  const auto target = random_llama(11, 0), draft = random_llama(11, 0.1f);
  boost::asio::io_context io;
  engine_config cfg;
  cfg.kv_blocks = 32;
  cfg.block_size = 4;
  cfg.max_num_batched_tokens = 24;
  cfg.prefix_caching = true;
  // A step of more than 6 rows is past the knee: sequences lapse, and later prompts hit their blocks.
  cfg.speculative = {"draft_model", 3, 4, 1, "draft", 6};
  engine e(io.get_executor(), target, s.vocabulary, cfg, nullptr, draft);
  e.kv_allocator().check_invariants_every_step(true);
  auto link = std::make_shared<test::recording_link>();
  std::mt19937 rng(3);
  std::vector<std::shared_ptr<request_actor>> actors;
  const auto prompts = test_prompts(*s.vocabulary, 10);
  for (int i = 0; i < 60; ++i) {
    sampling_params p;
    p.temperature = i % 3 == 0 ? 0.8f : 0.0f;  // sampled drafts too
    p.max_tokens = 1 + static_cast<int>(rng() % 60);
    actors.push_back(test::start_request(e, link, "r" + std::to_string(i), prompts[rng() % prompts.size()], p));
    io.restart();
    io.run_for(std::chrono::milliseconds(rng() % 4));
    if (rng() % 4 == 0) actors[rng() % actors.size()]->tell(cancel_generation{});
  }
  ASSERT_TRUE(test::run_until(io, [&] { return link->n_ended() == 60; }));
  for (const auto& [id, r] : link->requests()) EXPECT_EQ(r.n_final, 1) << id;
  const engine_status st = test::status_of(io, e);
  EXPECT_EQ(st.kv.blocks_free, st.kv.blocks_total);
}

}  // namespace
}  // namespace pagedserve
