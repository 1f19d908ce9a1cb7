// Every supported architecture, as a small random-weight safetensors folder (fp32, bf16, fp16),
// loaded by hf_model_load and run through forward_pass with two sequences sharing paged steps
// (prefill chunks and decodes mixed), against the scalar reference of hf_reference.hpp.
//
// Tolerance: |engine - reference| <= 1e-4 on every logit (logits are O(1)) for every dtype. The
// reference uses the very values stored in the folder (bf16/fp16-rounded for those dtypes), and the
// engine widens them exactly and accumulates in fp32, so bf16 and fp16 need no looser bound than fp32.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "model/engine_runner.hpp"
#include "model/hf_arch_specs.hpp"
#include "model/hf_reference.hpp"
#include "model/hf_test_model.hpp"
#include "model/forward.hpp"
#include "model/hf_model.hpp"
#include "kv/kv_cache.hpp"
#include "model/model_load.hpp"

namespace pagedserve {
namespace {

using test::arch_spec;
using test::run_engine;

class hf_architecture : public testing::TestWithParam<arch_spec> {};

TEST_P(hf_architecture, logits_match_the_scalar_reference) {
  const arch_spec& s = GetParam();
  const std::vector<int> a = {1, 17, 42, 5, 96, 3, 60, 11}, b = {1, 88, 23, 23, 70};
  for (dtype type : {dtype::f32, dtype::bf16, dtype::f16}) {
    if (type == dtype::f16 && s.name != "qwen3" && s.name != "llama3") continue;  // fp16 on two, to keep it fast
    SCOPED_TRACE(std::string(dtype_name(type)));
    const auto tensors = test::spec_random_tensors(s, type, 1234);
    const auto dir = test::temp_dir(s.name + "_" + std::string(dtype_name(type)));
    test::write_spec_folder(dir, s, tensors, type, type == dtype::bf16 ? 3 : 1);  // bf16: sharded with an index
    auto m = hf_model_load(dir);
    ASSERT_TRUE(m.has_value()) << m.error();
    EXPECT_EQ((*m)->layers[0].wq.type, type) << "weights are kept in their stored dtype";
    EXPECT_EQ((*m)->config.architecture, s.architecture);
    EXPECT_EQ((*m)->classifier == (*m)->token_embedding, s.tied);

    const test::hf_reference ref(s, tensors);
    const auto want_a = ref.forward(a), want_b = ref.forward(b);
    for (const kernels::kernel_table* kt : kernels::kernel_tables_supported()) {
      SCOPED_TRACE(std::string(kernels::isa_name(kt->which)));
      const auto got = run_engine(**m, *kt, a, b);
      double worst = 0.0;
      for (int seq = 0; seq < 2; ++seq) {
        const auto& want = seq == 0 ? want_a : want_b;
        for (std::size_t p = 0; p < want.size(); ++p)
          for (int v = 0; v < s.vocab; ++v) worst = std::max(worst, std::abs(got[seq][p][v] - want[p][v]));
      }
      // A table with AVX512-BF16 dot products rounds the activations of every bf16 matmul to bf16:
      // measured up to 0.056 over these architectures (fp32 activations: below 1e-4).
      const bool rounded = type == dtype::bf16 && kt->bf16_rounds_activations;
      EXPECT_LE(worst, rounded ? 0.15 : 1e-4) << "largest logit difference";
    }
    std::filesystem::remove_all(dir);
  }
}

// A bf16 folder gives bit-identical logits kept as bf16 or widened to fp32 at load, and to the same
// model written as fp32 (the 16-bit kernels widen exactly and accumulate in the fp32 order), on the
// best table that widens bf16 exactly (not one whose bf16 dot products round the activations).
TEST_P(hf_architecture, bf16_in_memory_equals_fp32_bit_for_bit) {
  const arch_spec& s = GetParam();
  const auto tensors = test::spec_random_tensors(s, dtype::bf16, 99);
  const auto dir16 = test::temp_dir(s.name + "_bits16"), dir32 = test::temp_dir(s.name + "_bits32");
  test::write_spec_folder(dir16, s, tensors, dtype::bf16);
  test::write_spec_folder(dir32, s, tensors, dtype::f32);
  auto as_bf16 = hf_model_load(dir16);
  auto widened = model_load_any(dir16 / "config.json", {.weights = weight_format::f32});
  auto as_f32 = hf_model_load(dir32);
  ASSERT_TRUE(as_bf16 && widened && as_f32);
  EXPECT_EQ((*widened)->layers[0].wq.type, dtype::f32);
  const std::vector<int> a = {1, 2, 3, 4, 5, 6, 7, 8}, b = {9, 10, 11, 12, 13};
  const auto tables = kernels::kernel_tables_supported();
  const auto exact = std::find_if(tables.begin(), tables.end(), [](const auto* t) { return !t->bf16_rounds_activations; });
  ASSERT_NE(exact, tables.end());
  const auto& kt = **exact;
  const auto x = run_engine(**as_bf16, kt, a, b), y = run_engine(**widened, kt, a, b), z = run_engine(**as_f32, kt, a, b);
  EXPECT_EQ(x, y);
  EXPECT_EQ(x, z);
  std::filesystem::remove_all(dir16);
  std::filesystem::remove_all(dir32);
}

// int8 (W8A8, --quantize int8) on every architecture, GQA/MQA and MoE experts included: A's logits
// are bit-identical whichever sequence shares its steps (the int8 sums are exact, so batch
// composition cannot change them), on every kernel table, and stay near the fp32 engine's.
// Measured largest |int8 - fp32| over each model's logits: 4.6-7.4% of their rms, 11.3% on
// qwen3_moe_step2 (dims of 32-40 average little quantization noise away); the bound leaves 2x.
TEST_P(hf_architecture, int8_is_batch_invariant_and_close_to_fp32) {
  const arch_spec& s = GetParam();
  const auto tensors = test::spec_random_tensors(s, dtype::f32, 4321);
  const auto dir = test::temp_dir(s.name + "_int8");
  test::write_spec_folder(dir, s, tensors, dtype::f32);
  auto fp32 = hf_model_load(dir);
  ASSERT_TRUE(fp32.has_value()) << fp32.error();
  auto int8 = std::make_shared<model>(**fp32);
  model_convert_weights(*int8, weight_format::int8);
  ASSERT_EQ(int8->layers[0].wq.type, dtype::i8);
  for (const layer_weights& l : int8->layers)
    for (const expert_weights& e : l.experts) ASSERT_EQ(e.down.type, dtype::i8);
  const std::vector<int> a = {1, 17, 42, 5, 96, 3, 60, 11}, b = {1, 88, 23, 23, 70}, c = {1, 4, 9, 33, 2};
  for (const kernels::kernel_table* kt : kernels::kernel_tables_supported()) {
    SCOPED_TRACE(std::string(kernels::isa_name(kt->which)));
    const auto with_b = run_engine(*int8, *kt, a, b), with_c = run_engine(*int8, *kt, a, c);
    EXPECT_EQ(with_b[0], with_c[0]) << "A's logits depend on its step neighbours";
    const auto want = run_engine(**fp32, *kt, a, b);
    double worst = 0.0, ss = 0.0;
    int n = 0;
    for (int seq = 0; seq < 2; ++seq)
      for (std::size_t p = 0; p < want[seq].size(); ++p)
        for (int v = 0; v < s.vocab; ++v, ++n) {
          worst = std::max(worst, static_cast<double>(std::abs(with_b[seq][p][v] - want[seq][p][v])));
          ss += static_cast<double>(want[seq][p][v]) * want[seq][p][v];
        }
    const double rms = std::sqrt(ss / n);
    std::cout << s.name << " " << kernels::isa_name(kt->which) << ": int8 max |err| " << worst << ", logit rms " << rms
              << "\n";
    EXPECT_LE(worst, 0.25 * rms) << "largest logit difference, logit rms " << rms;
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(all, hf_architecture, testing::ValuesIn(test::arch_specs()),
                         [](const testing::TestParamInfo<arch_spec>& info) { return info.param.name; });

TEST(hf_config, generation_config_and_rope_details_are_read) {
  arch_spec s = test::make_spec("gen", "Qwen3ForCausalLM", 32, 40, 2, 4, 2, 16);
  s.qk_norm = true;
  s.llama3_scaling = true;
  const auto tensors = test::spec_random_tensors(s, dtype::f32, 5);
  const auto dir = test::temp_dir("gen");
  test::write_spec_folder(dir, s, tensors, dtype::f32);
  auto m = hf_model_load(dir);
  ASSERT_TRUE(m.has_value()) << m.error();
  const model& mm = **m;
  EXPECT_EQ(mm.generation.eos_token_ids, (std::vector<int>{2, 7}));  // generation_config.json wins
  EXPECT_EQ(mm.generation.bos_token_id, 1);
  EXPECT_FLOAT_EQ(mm.generation.temperature.value_or(0), 0.6f);
  EXPECT_EQ(mm.generation.top_k.value_or(0), 20);
  EXPECT_EQ(mm.config.rope, kernels::rope_style::neox);
  EXPECT_EQ(mm.config.head_size(), 16);
  EXPECT_EQ(mm.config.q_dim(), 64);
  EXPECT_EQ(mm.config.kv_dim(), 32);
  const auto want = test::hf_reference(s, tensors).inv_freq();
  ASSERT_EQ(mm.rope_inv_freq.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(mm.rope_inv_freq[i], want[i], 1e-6 * want[i]) << i;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pagedserve
