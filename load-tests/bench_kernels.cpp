// ops::matmul for every kernel table on the s110m shapes (dim 768, hidden 2048, vocab 32000), from
// decode (1 token) to prefill batches. Names carry the ISA, scalar first for each shape, so one run
// shows the speed-ups side by side; "ratio_vs_scalar" is this table's speed over scalar's on the
// same shape and batch. Reports weight bytes/s (decode is bound by streaming them) and GFLOP/s.
//
//   ./build/load-tests/bench_kernels --benchmark_filter='768x768'
#include <benchmark/benchmark.h>

#include <chrono>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "pagedserve/kernels.hpp"

namespace {

using namespace pagedserve::kernels;

struct matmul_shape {
  int n_out;
  int n_in;
  const char* what;
};

// s110m: attention projections, FFN up/gate and down, classifier.
constexpr matmul_shape shapes[] = {
    {768, 768, "wq"}, {2048, 768, "w1"}, {768, 2048, "w2"}, {32000, 768, "wcls"}};
constexpr int token_counts[] = {1, 4, 16, 64, 256};

// Seconds per iteration of the scalar table, keyed by (n_out, n_in, n_tokens); filled when the
// scalar benchmark of that case runs, which is registered before the others.
std::map<std::tuple<int, int, int>, double>& scalar_seconds() {
  static std::map<std::tuple<int, int, int>, double> m;
  return m;
}

void bench_matmul(benchmark::State& state, const kernel_table* kt, matmul_shape shape, int n_tokens) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> w(static_cast<std::size_t>(shape.n_out) * shape.n_in);
  std::vector<float> x(static_cast<std::size_t>(n_tokens) * shape.n_in);
  std::vector<float> out(static_cast<std::size_t>(n_tokens) * shape.n_out);
  for (float& f : w) f = dist(rng);
  for (float& f : x) f = dist(rng);

  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    ops::matmul(*kt, out.data(), x.data(), w.data(), n_tokens, shape.n_in, shape.n_out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / state.iterations();

  const double weight_bytes = static_cast<double>(w.size()) * sizeof(float);
  const double flops = 2.0 * n_tokens * shape.n_in * static_cast<double>(shape.n_out);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * weight_bytes));
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tokens"] = n_tokens;

  const auto key = std::make_tuple(shape.n_out, shape.n_in, n_tokens);
  if (kt->which == isa::scalar) {
    scalar_seconds()[key] = seconds;
    state.counters["ratio_vs_scalar"] = 1.0;
  } else if (const auto it = scalar_seconds().find(key); it != scalar_seconds().end()) {
    state.counters["ratio_vs_scalar"] = it->second / seconds;
  }
}

void register_benchmarks() {
  const auto supported = kernel_tables_supported();
  // Scalar first (the list is best first), so its time is known when the faster ones run.
  const std::vector<const kernel_table*> tables(supported.rbegin(), supported.rend());
  for (const matmul_shape& shape : shapes)
    for (int n_tokens : token_counts)
      for (const kernel_table* kt : tables) {
        const std::string name = "matmul/" + std::to_string(shape.n_out) + "x" + std::to_string(shape.n_in) + "_" +
                                 shape.what + "/tokens:" + std::to_string(n_tokens) + "/" +
                                 std::string(isa_name(kt->which));
        benchmark::RegisterBenchmark(name.c_str(), bench_matmul, kt, shape, n_tokens)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond)
            ->MinTime(0.2);
      }
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
