// Sampling one token from a 32000-entry vocabulary (the s110m/TinyLlama vocabulary), per sampling
// setting, against greedy argmax in the same run (the floor: one pass over the logits). A step samples
// one row per running sequence, so at 64 streams this cost is paid 64 times per step.
//
//   ./build/load-tests/bench_sampling
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "pagedserve/sampling.hpp"

namespace {

using namespace pagedserve;

constexpr int vocab = 32000;

// Logits shaped like a language model's: a few likely tokens over a long Gaussian tail.
std::vector<float> lm_logits(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> tail(0.0f, 2.0f);
  std::vector<float> l(vocab);
  for (float& x : l) x = tail(rng);
  for (int i = 0; i < 20; ++i) l[(i * 7919) % vocab] = 12.0f - i * 0.5f;
  return l;
}

void bench_sample(benchmark::State& state, sampling_params p) {
  const std::vector<float> logits = lm_logits(1);
  std::vector<float> scratch(vocab);
  sampler s(p, 7);
  for (auto _ : state) {
    scratch = logits;  // sample() may modify its logits
    benchmark::DoNotOptimize(s.sample(scratch.data(), vocab));
  }
  state.SetItemsProcessed(state.iterations());
}

sampling_params params(float temperature, float top_p, int top_k, float min_p) {
  sampling_params p;
  p.temperature = temperature, p.top_p = top_p, p.top_k = top_k, p.min_p = min_p;
  return p;
}

}  // namespace

BENCHMARK_CAPTURE(bench_sample, greedy, params(0, 1, 0, 0))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bench_sample, temperature_1, params(1, 1, 0, 0))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bench_sample, top_p_0_9, params(1, 0.9f, 0, 0))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bench_sample, top_p_0_999, params(1, 0.999f, 0, 0))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bench_sample, top_k_40, params(1, 1, 40, 0))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bench_sample, min_p_0_05, params(1, 1, 0, 0.05f))->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
