// Sampling one token from a 32000-entry vocabulary (the s110m/TinyLlama vocabulary) and a 151936-entry
// one (Qwen's), per sampling setting, against greedy argmax in the same run (the floor: one pass over
// the logits). A step samples one row per running sequence, so at 64 streams this cost is paid 64
// times per step. "flat" rows are a random-weight model's (every token nearly as likely: top-p keeps
// most of the vocabulary, the worst case of a cut); the others a trained model's shape.
//
//   ./build/load-tests/bench_sampling
//   A/B: /tmp/old/bench_sampling --benchmark_filter=32000 ; ./build/load-tests/bench_sampling ...
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "pagedserve/sampling.hpp"

namespace {

using namespace pagedserve;

// Logits shaped like a language model's: a few likely tokens over a long Gaussian tail (spread 2);
// with spread 0.05 and no likely tokens, a random-weight model's flat row.
std::vector<float> lm_logits(std::uint64_t seed, int vocab, float spread) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> tail(0.0f, spread);
  std::vector<float> l(vocab);
  for (float& x : l) x = tail(rng);
  if (spread >= 1.0f)
    for (int i = 0; i < 20; ++i) l[(i * 7919) % vocab] = 12.0f - i * 0.5f;
  return l;
}

void bench_sample(benchmark::State& state, sampling_params p) {
  const int vocab = static_cast<int>(state.range(0));
  const std::vector<float> logits = lm_logits(1, vocab, state.range(1) ? 2.0f : 0.05f);
  std::vector<float> scratch(vocab);
  sampler s(p, 7);
  token_logprobs lp;
  for (auto _ : state) {
    scratch = logits;  // sample() may modify its logits
    benchmark::DoNotOptimize(s.sample(scratch.data(), vocab, p.logprobs >= 0 ? &lp : nullptr));
  }
  state.SetItemsProcessed(state.iterations());
}

sampling_params params(float temperature, float top_p, int top_k, float min_p, int logprobs = -1) {
  sampling_params p;
  p.temperature = temperature, p.top_p = top_p, p.top_k = top_k, p.min_p = min_p, p.logprobs = logprobs;
  return p;
}

// Arguments: vocabulary size, row shape (1: a trained model's, 0: flat).
void rows(benchmark::internal::Benchmark* b) {
  b->ArgNames({"vocab", "lm"})->Args({32000, 1})->Args({151936, 1})->Args({32000, 0})->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK_CAPTURE(bench_sample, greedy, params(0, 1, 0, 0))->Apply(rows);
BENCHMARK_CAPTURE(bench_sample, temperature_1, params(1, 1, 0, 0))->Apply(rows);
BENCHMARK_CAPTURE(bench_sample, t0_8_top_p_0_95, params(0.8f, 0.95f, 0, 0))->Apply(rows);
BENCHMARK_CAPTURE(bench_sample, top_p_0_9, params(1, 0.9f, 0, 0))->Apply(rows);
BENCHMARK_CAPTURE(bench_sample, top_p_0_999, params(1, 0.999f, 0, 0))->Apply(rows);
BENCHMARK_CAPTURE(bench_sample, top_k_40, params(1, 1, 40, 0))->Apply(rows);
BENCHMARK_CAPTURE(bench_sample, min_p_0_05, params(1, 1, 0, 0.05f))->Apply(rows);
BENCHMARK_CAPTURE(bench_sample, t0_8_top_p_0_95_logprobs_5, params(0.8f, 0.95f, 0, 0, 5))->Apply(rows);

BENCHMARK_MAIN();
