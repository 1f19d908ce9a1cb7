// stories260K quantized at load (--quantize int8 / bf16) against its fp32 self: the logits of a real
// prompt stay within a stated bound, greedy text stays sensible, and the int8 model keeps the
// engine's batch invariance (chunked prefill gives the same ids).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iostream>
#include <numeric>

#include "model/forward.hpp"
#include "model/generator.hpp"
#include "kv/kv_cache.hpp"
#include "pagedserve/model.hpp"
#include "tokenizer/tokenizer.hpp"
#include "model/prefill_logits.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

using test::prefill_logits;

const char* const prompt_text = "Once upon a time, there was a little girl named Lily. She loved to play";

std::shared_ptr<const model> load_as(weight_format format) {
  auto m = llama2c_model_load(test::model_file("stories260K.bin"));
  EXPECT_TRUE(m.has_value()) << m.error();
  auto converted = std::make_shared<model>(**m);
  model_convert_weights(*converted, format);
  return converted;
}

struct logit_error {
  double max_abs = 0;        // largest |quantized - fp32| over every logit
  double logit_rms = 0;      // rms of the fp32 logits, for scale
  double top1_agreement = 0; // fraction of positions with the same argmax
};

logit_error compare(const std::vector<float>& got, const std::vector<float>& want, int vocab) {
  logit_error e;
  double ss = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    e.max_abs = std::max(e.max_abs, static_cast<double>(std::abs(got[i] - want[i])));
    ss += static_cast<double>(want[i]) * want[i];
  }
  e.logit_rms = std::sqrt(ss / want.size());
  const std::size_t n_pos = want.size() / vocab;
  int same = 0;
  for (std::size_t p = 0; p < n_pos; ++p) {
    const auto g = got.begin() + p * vocab, w = want.begin() + p * vocab;
    same += std::max_element(g, g + vocab) - g == std::max_element(w, w + vocab) - w;
  }
  e.top1_agreement = static_cast<double>(same) / n_pos;
  return e;
}

// Measured (21 positions x 512 logits of rms 8.57): int8 (W8A8: weights and activations) max |err|
// 0.517 (6.0% of the rms; weight-only int8 was 0.305), bf16 0.081, top-1 agreement 1.0 for both.
// Every kernel table agrees to 1e-5 (the int8 matmuls give the same bits on every table; norms,
// attention and SwiGLU are fp32 and differ in the last bits). The bounds leave about 2x headroom.
TEST(quantized_model, stories260k_logits_stay_close_to_fp32) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  auto tok = llama2c_tokenizer_load(test::model_file("tok512.bin"), 512);
  ASSERT_TRUE(tok.has_value()) << tok.error();
  const auto ids = (*tok)->encode(prompt_text, true);
  const auto fp32 = load_as(weight_format::as_stored);
  const auto int8 = load_as(weight_format::int8);
  const auto bf16 = load_as(weight_format::bf16);
  ASSERT_EQ(int8->layers[0].wq.type, dtype::i8);
  ASSERT_EQ(int8->classifier.data, int8->token_embedding.data) << "tied classifier stays shared";
  const int vocab = fp32->config.vocab_size;
  for (const kernels::kernel_table* kt : kernels::kernel_tables_supported()) {
    SCOPED_TRACE(std::string(kernels::isa_name(kt->which)));
    const auto want = prefill_logits(*fp32, *kt, ids);
    const auto got8 = prefill_logits(*int8, *kt, ids);
    const logit_error e8 = compare(got8, want, vocab);
    const logit_error e16 = compare(prefill_logits(*bf16, *kt, ids), want, vocab);
    std::cout << kernels::isa_name(kt->which) << ": logit rms " << e8.logit_rms << "; int8 max |err| " << e8.max_abs
              << " top-1 " << e8.top1_agreement << "; bf16 max |err| " << e16.max_abs << " top-1 "
              << e16.top1_agreement << " (" << ids.size() << " positions)\n";
    EXPECT_LT(e8.max_abs, 1.0);
    EXPECT_LT(e16.max_abs, 0.16);
    EXPECT_GE(e8.top1_agreement, 0.95);
    EXPECT_GE(e16.top1_agreement, 0.95);
  }
}

TEST(quantized_model, stories260k_int8_greedy_text_is_sensible_and_batch_invariant) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  auto tok = llama2c_tokenizer_load(test::model_file("tok512.bin"), 512);
  ASSERT_TRUE(tok.has_value()) << tok.error();
  const auto ids = (*tok)->encode("Once upon a time", true);
  const auto fp32 = load_as(weight_format::as_stored);
  sampling_params greedy;
  greedy.temperature = 0;
  greedy.max_tokens = 60;
  const kernels::kernel_table& kt = *kernels::kernel_table_select();
  const generation want = generate_sequence(*fp32, **tok, kt, ids, greedy, 0);
  for (weight_format f : {weight_format::int8, weight_format::bf16}) {
    const auto m = load_as(f);
    std::string text;
    const generation g = generate_sequence(*m, **tok, kt, ids, greedy, 0, [&](std::string_view s) { text += s; });
    std::cout << (f == weight_format::int8 ? "int8" : "bf16") << ": " << text << "\n";
    // Same opening words as fp32 (greedy may part ways later, where two tokens are nearly tied).
    const std::size_t n_common = std::mismatch(g.generated.begin(), g.generated.end(), want.generated.begin(),
                                               want.generated.end()).first - g.generated.begin();
    EXPECT_GE(n_common, 10u) << text;
    EXPECT_GT(std::count_if(text.begin(), text.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); }), 40)
        << "mostly words: " << text;
    for (int chunk : {1, 3, 7}) {
      const generation c = generate_sequence(*m, **tok, kt, ids, greedy, 0, {}, chunk);
      EXPECT_EQ(c.generated, g.generated) << "prefill chunk " << chunk;
    }
  }
}

}  // namespace
}  // namespace pagedserve
