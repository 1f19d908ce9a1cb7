// The forward pass against llama2.c run.c: greedy ids for every golden case and the logged logits.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <algorithm>

#include "model/golden_support.hpp"
#include "kv/block_manager.hpp"
#include "model/forward.hpp"
#include "model/generator.hpp"
#include "kv/kv_cache.hpp"
#include "pagedserve/model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagedserve {
namespace {

struct stories260k {
  std::shared_ptr<const model> weights;
  std::unique_ptr<tokenizer> vocabulary;
};

stories260k load_stories() {
  auto m = llama2c_model_load(test::model_file("stories260K.bin"));
  EXPECT_TRUE(m.has_value()) << m.error();
  auto t = llama2c_tokenizer_load(test::model_file("tok512.bin"), (*m)->config.vocab_size);
  EXPECT_TRUE(t.has_value()) << t.error();
  return {std::move(*m), std::move(*t)};
}

class golden : public ::testing::TestWithParam<const kernels::kernel_table*> {};

TEST_P(golden, greedy_ids_match_run_c_for_every_case) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  const auto cases = test::golden_stories260k();
  ASSERT_EQ(cases.size(), 8u);
  for (const auto& c : cases) {
    SCOPED_TRACE("prompt '" + c.prompt + "' steps " + std::to_string(c.steps));
    const auto prompt = s.vocabulary->encode(c.prompt, true);
    ASSERT_EQ(std::vector<int>(prompt.begin(), prompt.end()), c.prompt_ids);
    sampling_params greedy;
    greedy.temperature = 0;
    greedy.max_tokens = c.n_generated;
    const generation g = generate_sequence(*s.weights, *s.vocabulary, *GetParam(), prompt, greedy, 0);
    EXPECT_EQ(std::vector<int>(g.generated.begin(), g.generated.end()), c.generated_ids);
    EXPECT_EQ(g.stopped, c.stopped_on_bos);
  }
}

TEST_P(golden, chunked_prefill_gives_the_same_ids) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  const auto s = load_stories();
  const auto cases = test::golden_stories260k();
  for (const auto& c : cases) {
    if (c.steps != 64) continue;
    SCOPED_TRACE(c.prompt);
    sampling_params greedy;
    greedy.temperature = 0;
    greedy.max_tokens = c.n_generated;
    const auto prompt = s.vocabulary->encode(c.prompt, true);
    for (int chunk : {1, 2, 3}) {
      const generation g = generate_sequence(*s.weights, *s.vocabulary, *GetParam(), prompt, greedy, 0, {}, chunk);
      EXPECT_EQ(std::vector<int>(g.generated.begin(), g.generated.end()), c.generated_ids) << "chunk " << chunk;
    }
  }
}

// Runs the golden case that logged logits, one position a step, over a K/V cache of kv_type, and
// checks each position's argmax and logits against run.c's to `tolerance`.
void check_first_positions_logits(const kernels::kernel_table& kt, dtype kv_type, double tolerance) {
  const auto s = load_stories();
  const auto cases = test::golden_stories260k();
  const auto it = std::find_if(cases.begin(), cases.end(), [](const auto& c) { return !c.first_positions.empty(); });
  ASSERT_NE(it, cases.end());
  const model_config& mc = s.weights->config;
  block_manager blocks(64, 16);
  kv_cache cache(mc.n_layers, 64, 16, mc.n_kv_heads, mc.head_size(), kv_type);
  forward_pass forward(*s.weights, kt, 1);
  const request_id seq{7};
  for (const auto& p : it->first_positions) {
    ASSERT_TRUE(blocks.ensure_capacity(seq, p.pos + 1));
    step_batch b;
    b.tokens = {p.input_token};
    b.positions = {p.pos};
    b.seq_of_token = {0};
    b.seq_block_offset = {0};
    for (block_id id : blocks.table(seq)) b.block_tables.push_back(id.value);
    b.slots = {b.block_tables[p.pos / 16] * 16 + p.pos % 16};
    b.logits_rows = {0};
    const float* logits = forward.run(b, cache);
    const float* best = std::max_element(logits, logits + mc.vocab_size);
    EXPECT_EQ(best - logits, p.argmax) << "pos " << p.pos;
    EXPECT_NEAR(*best, p.max_logit, tolerance) << "pos " << p.pos;
    for (int i = 0; i < 8; ++i) EXPECT_NEAR(logits[i], p.logits_0_7[i], tolerance) << "pos " << p.pos << " logit " << i;
  }
}

TEST_P(golden, logits_of_first_positions_match_to_1e_4) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  check_first_positions_logits(*GetParam(), dtype::f32, 1e-4);
}

// An fp16 K/V cache rounds every key and value (relative error up to 2^-11): the logits move (at
// most 5.8e-3 over these positions and every table, measured; 1.1e-5 with the fp32 cache), and no
// argmax changes.
TEST_P(golden, fp16_kv_cache_logits_stay_close_to_run_c) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  check_first_positions_logits(*GetParam(), dtype::f16, 1e-2);
}

INSTANTIATE_TEST_SUITE_P(every_kernel_table, golden, ::testing::ValuesIn(kernels::kernel_tables_supported().begin(),
                                                                         kernels::kernel_tables_supported().end()),
                         [](const auto& info) { return std::string(kernels::isa_name(info.param->which)); });

}  // namespace
}  // namespace pagedserve
