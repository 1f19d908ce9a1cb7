// pagedserve's logits against llama.cpp's own (libllama, tests/ggml_reference/llama_library.hpp) on
// every ftype llama-quantize writes, the way quant_golden.json checks seven of them: the golden model
// (qtiny-F32.gguf, written by llama.cpp) quantized by llama_model_quantize itself, then teacher forced
// over the golden's three prompts and three others by llama.cpp and by pagedserve:
//   - loaded packed (the blocks as stored) on the best kernel table: llama.cpp's quantized path, to 0.03;
//   - loaded with --quantize f32 (each block dequantized exactly) on the scalar table: llama.cpp's
//     logits over the same file requantized to F32 (`llama-quantize --allow-requantize ... F32`, ggml's
//     dequantization), to 1e-3.
// One test per ftype, so CTest runs them side by side.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "llama_library.hpp"
#include "model/gguf_model.hpp"
#include "model/prefill_logits.hpp"
#include "pagedserve/kernels.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

// quant_golden.json's three prompts (lengths 8, 24, 64), then three more of those lengths: BOS and ids
// spread over the golden model's 512-token vocabulary past its special tokens.
std::vector<std::vector<std::int32_t>> prompts(const std::filesystem::path& golden_json) {
  std::vector<std::vector<std::int32_t>> out;
  simdjson::dom::parser parser;
  for (auto p : parser.load(golden_json.string())["prompts"].get_array()) {
    auto& ids = out.emplace_back();
    for (auto v : p.get_array()) ids.push_back(static_cast<std::int32_t>(int64_t(v)));
  }
  for (const int n : {8, 24, 64}) {
    auto& ids = out.emplace_back(1, 1);
    for (int i = 1; i < n; ++i) ids.push_back(3 + (i * 7919 + n * 104729) % 509);
  }
  return out;
}

// Largest |ours - llama.cpp's| over every prompt, position and logit.
double worst_error(const model& m, const kernels::kernel_table& kt, const std::vector<std::vector<std::int32_t>>& ids,
                   const std::vector<std::vector<float>>& want) {
  double worst = 0;
  for (std::size_t p = 0; p < ids.size(); ++p) {
    const std::vector<token_id> tokens(ids[p].begin(), ids[p].end());
    const std::vector<float> got = test::prefill_logits(m, kt, tokens);
    EXPECT_EQ(got.size(), want[p].size());
    for (std::size_t i = 0; i < std::min(got.size(), want[p].size()); ++i)
      worst = std::max(worst, static_cast<double>(std::abs(got[i] - want[p][i])));
  }
  return worst;
}

class llama_cpp_logits : public testing::TestWithParam<std::pair<const char*, int>> {};

TEST_P(llama_cpp_logits, match_on_the_golden_model) {
  const auto [ftype, number] = GetParam();
  const test::llama_library llama;
  if (!llama.ok()) GTEST_SKIP() << llama.why();
  const auto source = test::data_file("golden/gguf");
  PAGEDSERVE_REQUIRE_DATA(source);
  const auto quantized = test::temp_file(std::string("qtiny-") + ftype + ".gguf");
  const auto requantized = test::temp_file(std::string("qtiny-") + ftype + "-as-F32.gguf");
  ASSERT_TRUE(llama.quantize(source / "qtiny-F32.gguf", quantized, number));
  ASSERT_TRUE(llama.quantize(quantized, requantized, test::llama_ftype_all_f32, true));
  const auto ids = prompts(source / "quant_golden.json");
  const auto fast = llama.logits(quantized, ids);
  const auto exact = llama.logits(requantized, ids);
  ASSERT_FALSE(fast.empty()) << "llama.cpp could not evaluate " << quantized;
  ASSERT_FALSE(exact.empty()) << "llama.cpp could not evaluate " << requantized;

  const kernels::kernel_table& best = *kernels::kernel_table_select();
  auto packed = gguf_model_load(quantized, {.weights = weight_format::as_stored});
  ASSERT_TRUE(packed.has_value()) << packed.error();
  const double packed_error = worst_error(**packed, best, ids, fast);
  auto dequantized = gguf_model_load(quantized, {.weights = weight_format::f32});
  ASSERT_TRUE(dequantized.has_value()) << dequantized.error();
  const double exact_error = worst_error(**dequantized, *kernels::kernel_table_select("scalar"), ids, exact);
  std::printf("[ %s ] max |logit - llama.cpp's|: packed on %s %.3g (quantized path), f32 on scalar %.2g (F32)\n",
              ftype, std::string(kernels::isa_name(best.which)).c_str(), packed_error, exact_error);
  EXPECT_LE(packed_error, 0.03);
  EXPECT_LE(exact_error, 1e-3);
  std::filesystem::remove(quantized);
  std::filesystem::remove(requantized);
}

INSTANTIATE_TEST_SUITE_P(all, llama_cpp_logits, testing::ValuesIn(test::llama_ftypes),
                         [](const testing::TestParamInfo<std::pair<const char*, int>>& info) {
                           return std::string(info.param.first);
                         });

}  // namespace
}  // namespace pagedserve
