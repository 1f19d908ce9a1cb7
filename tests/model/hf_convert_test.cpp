// stories260K (llama2.c) converted to a Hugging Face folder serves the same model: the same greedy
// ids as run.c for every golden case and logits within 1e-5 of the llama2.c loader's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/golden_greedy.hpp"
#include "model/golden_support.hpp"
#include "model/hf_test_model.hpp"
#include "model/forward.hpp"
#include "model/generator.hpp"
#include "model/hf_model.hpp"
#include "kv/kv_cache.hpp"
#include "model/model_load.hpp"
#include "model/safetensors.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagedserve {
namespace {

// Logits [n, vocab] of every position of `tokens` as one prefill step.
std::vector<float> prefill_logits(const model& m, const kernels::kernel_table& kt, const std::vector<token_id>& tokens) {
  const int n = static_cast<int>(tokens.size()), vocab = m.config.vocab_size;
  kv_cache cache(m.config.n_layers, 8, 16, m.config.n_kv_heads, m.config.head_size());
  forward_pass fwd(m, kt, n);
  step_batch b;
  b.block_tables = {3, 1, 6, 0, 2, 5, 4, 7};
  b.seq_block_offset = {0};
  for (int p = 0; p < n; ++p) {
    b.tokens.push_back(tokens[p]);
    b.positions.push_back(p);
    b.seq_of_token.push_back(0);
    b.slots.push_back(b.block_tables[p / 16] * 16 + p % 16);
    b.logits_rows.push_back(p);
  }
  const float* logits = fwd.run(b, cache);
  return std::vector<float>(logits, logits + static_cast<std::size_t>(n) * vocab);
}

class stories_converted : public testing::Test {
 protected:
  void SetUp() override {
    ckpt_ = test::model_file("stories260K.bin");
    PAGEDSERVE_REQUIRE_DATA(ckpt_);
    dir_ = test::temp_dir("stories260K");
    std::filesystem::remove_all(dir_);
    auto written = hf_folder_write_from_llama2c(ckpt_, dir_);
    ASSERT_TRUE(written.has_value()) << written.error();
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::filesystem::path ckpt_, dir_;
};

TEST_F(stories_converted, is_a_genuine_hf_llama_folder) {
  auto set = safetensors_set::open_folder(dir_);
  ASSERT_TRUE(set.has_value()) << set.error();
  const auto* q = set->find("model.layers.0.self_attn.q_proj.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dtype_name, "F32");
  EXPECT_EQ(q->shape, (std::vector<std::int64_t>{64, 64}));
  EXPECT_EQ(set->find("lm_head.weight"), nullptr);  // stories260K ties its classifier
  auto m = model_load_any(dir_);
  ASSERT_TRUE(m.has_value()) << m.error();
  EXPECT_EQ((*m)->config.architecture, "LlamaForCausalLM");
  EXPECT_EQ((*m)->config.rope, kernels::rope_style::neox);
  EXPECT_TRUE((*m)->config.shared_classifier);
  auto original = model_load_any(ckpt_);
  ASSERT_TRUE(original.has_value());
  EXPECT_EQ((*m)->generation.eos_token_ids, (*original)->generation.eos_token_ids);  // same stop behaviour
  EXPECT_EQ((*m)->generation.bos_token_id, 1);
  EXPECT_EQ((*original)->config.rope, kernels::rope_style::interleaved);
}

TEST_F(stories_converted, logits_match_the_llama2c_loader_to_1e_5) {
  auto a = llama2c_model_load(ckpt_);
  auto b = hf_model_load(dir_);
  ASSERT_TRUE(a && b);
  std::vector<token_id> tokens;
  for (int i = 0; i < 120; ++i) tokens.push_back((i * 37 + 1) % 512);
  for (const kernels::kernel_table* kt : kernels::kernel_tables_supported()) {
    SCOPED_TRACE(std::string(kernels::isa_name(kt->which)));
    const auto x = prefill_logits(**a, *kt, tokens), y = prefill_logits(**b, *kt, tokens);
    double worst = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(x[i] - y[i])));
    EXPECT_LE(worst, 1e-5);
    // In fact bit-identical: the permuted rows give permuted q/k, and RoPE writes both layouts in
    // rotate-half order, so attention sums the same products in the same order.
    EXPECT_EQ(x, y);
  }
}

TEST_F(stories_converted, greedy_ids_match_run_c_for_every_golden_case) {
  auto m = hf_model_load(dir_);
  ASSERT_TRUE(m.has_value()) << m.error();
  auto tok = llama2c_tokenizer_load(test::model_file("tok512.bin"), (*m)->config.vocab_size);
  ASSERT_TRUE(tok.has_value()) << tok.error();
  test::expect_golden_greedy_ids(**m, **tok);
}

TEST_F(stories_converted, bf16_folder_loads_and_stays_close) {
  const auto dir16 = test::temp_dir("stories260K_bf16");
  ASSERT_TRUE(hf_folder_write_from_llama2c(ckpt_, dir16, {.type = dtype::bf16}).has_value());
  auto a = llama2c_model_load(ckpt_);
  auto b = hf_model_load(dir16);
  ASSERT_TRUE(a && b) << (b ? "" : b.error());
  EXPECT_EQ((*b)->token_embedding.type, dtype::bf16);
  std::vector<token_id> tokens = {1, 403, 261, 378, 300, 270, 430, 290, 296};
  const auto& kt = *kernels::kernel_table_select();
  const auto x = prefill_logits(**a, kt, tokens), y = prefill_logits(**b, kt, tokens);
  // bf16 keeps 8 bits of mantissa: logits (|x| up to ~15) move by a few hundredths.
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(x[i] - y[i])));
  EXPECT_LE(worst, 0.25);
  std::filesystem::remove_all(dir16);
}

}  // namespace
}  // namespace pagedserve
