// ops::matmul for every kernel table and weight type (f32, bf16, int8 W8A8) on the s110m shapes
// (dim 768, hidden 2048, vocab 32000), from decode (1 token) to prefill batches (64, 256 tokens);
// and for the ggml block formats ("blocks/", int8 activations; peak_ratio against the vpdpbusd peak)
// on TinyLlama's FFN shapes (5632x2048, 2048x5632), its classifier (32000x2048, q6_k only) and s110m's w1
// (2048x768), 1 to 128 tokens; and the activation quantization of those ("quantize_activations/").
// Names carry the dtype and ISA, scalar first for each case, so one run shows the speed-ups side by
// side; "ratio_vs_scalar" is this table's speed over scalar's on the same case, "ratio_vs_f32" this
// dtype's speed over f32's on the same case and table (f32 runs first, in the same process).
//
// Before the benchmarks it measures the machine's read bandwidth in this process (membw.hpp) and
// prints it in the context block; every case then reports the weight bytes it streamed per second
// ("bytes_per_second", what bounds decode) and "bw_ratio" = that / the measured bandwidth, plus
// "GOP/s" (2 x multiply-adds per second: fp32 FLOPs, or int8 ops for i8) and "peak_ratio" = that /
// the peak measured in this process too (compute_peak.hpp: fp32 FMA for f32/bf16, int8 vpdpbusd for
// i8; both zmm, so the AVX2 tables' ratios are against the AVX-512 peak). Weights small enough for
// L2/L3 can exceed 1: the s110m matrices up to 2048x768 fit L3. i8 timings include the activation
// quantization (one pass over x per call).
//
//   ./build/load-tests/bench_kernels --benchmark_filter='32000x768.*tokens:1/'
//   ./build/load-tests/bench_kernels --benchmark_filter='tokens:(1|64|256)/(f32|i8)/avx512'
//   ./build/load-tests/bench_kernels --benchmark_filter='blocks/.*tokens:(1|4|16)/(q4_k|q6_k)/avx512_vnni'
#include <benchmark/benchmark.h>
#include <tbb/task_arena.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "compute_peak.hpp"
#include "membw.hpp"
#include "model/ggml_block_panels.hpp"
#include "model/mapped_file.hpp"
#include "model/ggml_blocks.hpp"
#include "pagedserve/kernels.hpp"
#include "model/quantize.hpp"

namespace {

using namespace pagedserve;
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
constexpr dtype weight_types[] = {dtype::f32, dtype::bf16, dtype::i8};

double& measured_bandwidth_gbps() {
  static double gbps = 0.0;
  return gbps;
}

// GOP/s peaks of this process's arena: fp32 FMA and int8 vpdpbusd (0 when not measurable here).
double& fp32_peak() {
  static double gops = 0.0;
  return gops;
}
double& int8_peak() {
  static double gops = 0.0;
  return gops;
}

// Seconds per iteration, keyed by (isa, dtype, n_out, n_in, n_tokens); filled as each benchmark runs,
// scalar before the other tables and f32 before the other dtypes, for the ratios.
std::map<std::tuple<isa, dtype, int, int, int>, double>& seconds_per_case() {
  static std::map<std::tuple<isa, dtype, int, int, int>, double> m;
  return m;
}

// One random matrix in the benchmarked type, and the storage behind its view.
struct bench_weight {
  std::vector<float> f32;
  std::vector<std::uint16_t> bf16;
  i8_matrix i8;
  weight view;
};

bench_weight make_weight(dtype type, int rows, int cols, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  bench_weight b;
  b.f32.resize(static_cast<std::size_t>(rows) * cols);
  for (float& f : b.f32) f = dist(rng);
  b.view = weight_f32(b.f32.data(), rows, cols);
  if (type == dtype::bf16) {
    for (float f : b.f32) b.bf16.push_back(f32_to_bf16(f));
    b.view = weight{b.bf16.data(), dtype::bf16, rows, cols};
  } else if (type == dtype::i8) {
    b.i8 = quantize_matrix_i8(b.view);
    b.view = b.i8.view();
  }
  if (type != dtype::f32) b.f32 = {};  // only the benchmarked copy stays in memory
  return b;
}

void bench_matmul(benchmark::State& state, const kernel_table* kt, dtype type, matmul_shape shape, int n_tokens) {
  std::mt19937 rng(42);
  const bench_weight w = make_weight(type, shape.n_out, shape.n_in, rng);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(n_tokens) * shape.n_in);
  std::vector<float> out(static_cast<std::size_t>(n_tokens) * shape.n_out);
  for (float& f : x) f = dist(rng);

  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    ops::matmul(*kt, out.data(), x.data(), w.view, n_tokens);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / state.iterations();

  const double weight_bytes = static_cast<double>(w.view.n_bytes());
  const double flops = 2.0 * n_tokens * shape.n_in * static_cast<double>(shape.n_out);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * weight_bytes));
  state.counters["GOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tokens"] = n_tokens;
  if (measured_bandwidth_gbps() > 0) state.counters["bw_ratio"] = weight_bytes / seconds * 1e-9 / measured_bandwidth_gbps();
  if (const double peak = type == dtype::i8 ? int8_peak() : fp32_peak(); peak > 0)
    state.counters["peak_ratio"] = flops / seconds * 1e-9 / peak;

  seconds_per_case()[std::make_tuple(kt->which, type, shape.n_out, shape.n_in, n_tokens)] = seconds;
  const auto ratio_to = [&](isa i, dtype t) {
    const auto it = seconds_per_case().find(std::make_tuple(i, t, shape.n_out, shape.n_in, n_tokens));
    return it == seconds_per_case().end() ? 0.0 : it->second / seconds;
  };
  if (const double r = ratio_to(isa::scalar, type); r > 0) state.counters["ratio_vs_scalar"] = r;
  if (const double r = ratio_to(kt->which, dtype::f32); r > 0) state.counters["ratio_vs_f32"] = r;
}

// Block-quantized weights (ggml formats) on TinyLlama's FFN shapes and classifier (q6_k) and s110m's
// w1 (768 wide: 3 K-quant
// super-blocks a row, where per-panel costs show). The matrix is copied until the
// copies pass 256 MiB and each iteration reads the next copy, so every step streams its weights from
// DRAM as a real decode does (one 6-12 MB matrix alone would sit in L3 and beat the bandwidth).
// PAGEDSERVE_BENCH_HOT=1 keeps one copy instead, in cache: the kernel's compute ceiling, which must sit
// well above the bandwidth for a decode to stream at it (docs/block-kernels-speed.md).
// The classifier shape runs q6_k only: the classifier's format in llama.cpp's 4-bit and K-quant mixes.
constexpr int classifier_rows = 32000;
constexpr matmul_shape block_shapes[] = {{5632, 2048, "w1_tinyllama"}, {2048, 5632, "w2_tinyllama"}, {2048, 768, "w1_s110m"}, {768, 768, "wo_s110m"},
                                         {classifier_rows, 2048, "classifier_tinyllama"}};
constexpr int block_token_counts[] = {1, 4, 16, 64, 128};
constexpr dtype block_types[] = {dtype::q4_k, dtype::q6_k, dtype::q4_0, dtype::q8_0, dtype::q5_k, dtype::q5_0,
                                 dtype::q4_1, dtype::q5_1, dtype::iq4_nl, dtype::iq4_xs, dtype::q3_k, dtype::q2_k};

// Random blocks with small fp16 scales (the kernels' speed does not depend on the values).
std::vector<std::byte> random_block_matrix(dtype type, int rows, int cols, std::mt19937& rng) {
  std::vector<std::byte> data(rows * block_row_bytes(type, cols));
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::byte& b : data) b = static_cast<std::byte>(byte(rng));
  const block_layout l = block_layout_of(type);
  const std::uint16_t scale = f32_to_f16(0.01f);
  // d sits at offset 0 but for q2_k (80, dmin 82), q3_k (108) and q6_k (208); dmin or m follow d.
  const int d_at = type == dtype::q2_k ? 80 : type == dtype::q3_k ? 108 : type == dtype::q6_k ? 208 : 0;
  for (std::size_t at = 0; at < data.size(); at += l.bytes) {
    std::memcpy(&data[at + d_at], &scale, 2);
    if (type != dtype::q3_k && type != dtype::q6_k && type != dtype::iq4_xs) std::memcpy(&data[at + d_at + 2], &scale, 2);
  }
  return data;
}

// panels: the matrix repacked into row panels (ggml_block_panels.hpp), as the loader stores it when
// block_panels_pay; the same weights, so the A/B of the two layouts is this case and its "_panels" twin.
void bench_block_matmul(benchmark::State& state, const kernel_table* kt, dtype type, matmul_shape shape, int n_tokens,
                        bool panels) {
  std::mt19937 rng(42);
  std::vector<std::byte> one = random_block_matrix(type, shape.n_out, shape.n_in, rng);
  if (panels) {
    std::vector<std::byte> packed(block_panels_bytes(type, shape.n_out, shape.n_in));
    block_panels_pack(packed.data(), one.data(), type, shape.n_out, shape.n_in);
    one = std::move(packed);
  }
  const std::size_t n_copies = std::getenv("PAGEDSERVE_BENCH_HOT") ? 1 : ((std::size_t{256} << 20) + one.size() - 1) / one.size();
  // On huge pages, as the loader keeps the panels (model_pack_block_panels).
  const std::shared_ptr<std::byte> copies_owner = huge_page_buffer(n_copies * one.size());
  std::byte* const copies = copies_owner.get();
  for (std::size_t c = 0; c < n_copies; ++c) std::memcpy(copies + c * one.size(), one.data(), one.size());
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(n_tokens) * shape.n_in);
  std::vector<float> out(static_cast<std::size_t>(n_tokens) * shape.n_out);
  for (float& f : x) f = dist(rng);

  std::size_t copy = 0;
  // PAGEDSERVE_BENCH_ONE_THREAD=1: the matmul on this thread alone, so the CPU column is the kernel's
  // own time: steadier than real time when other processes share the cores (a ratio of two builds).
  tbb::task_arena arena(std::getenv("PAGEDSERVE_BENCH_ONE_THREAD") ? 1 : tbb::task_arena::automatic);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    weight w{copies + copy * one.size(), type, shape.n_out, shape.n_in};
    w.panel_rows = panels ? block_panel_rows : 0;
    copy = (copy + 1) % n_copies;
    arena.execute([&] { ops::matmul(*kt, out.data(), x.data(), w, n_tokens); });
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / state.iterations();
  const double weight_bytes = static_cast<double>(one.size());
  const double flops = 2.0 * n_tokens * shape.n_in * static_cast<double>(shape.n_out);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * weight_bytes));
  state.counters["GOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tokens"] = n_tokens;
  if (measured_bandwidth_gbps() > 0) state.counters["bw_ratio"] = weight_bytes / seconds * 1e-9 / measured_bandwidth_gbps();
  if (int8_peak() > 0) state.counters["peak_ratio"] = flops / seconds * 1e-9 / int8_peak();
  if (panels) return;  // the row layout's case carries the ratio to scalar
  seconds_per_case()[std::make_tuple(kt->which, type, shape.n_out, shape.n_in, n_tokens)] = seconds;
  const auto it = seconds_per_case().find(std::make_tuple(isa::scalar, type, shape.n_out, shape.n_in, n_tokens));
  if (it != seconds_per_case().end()) state.counters["ratio_vs_scalar"] = it->second / seconds;
}

// One token's activation quantization for the block matmuls (kernel_table::quantize_activations), which
// each block matmul of a decode step runs on one thread before its fork: 768 and 2048 wide (the s110m
// rows) in the q8_0 (q4_0, q8_0, ...) and q8_K (K-quants, iq4_xs) formats; "ns" a call and ratio_vs_scalar.
void bench_quantize_activations(benchmark::State& state, const kernel_table* kt, dtype type, int n) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (float& f : x) f = dist(rng);
  std::vector<std::byte> xq(activation_row_bytes(type, n));
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    kt->quantize_activations(xq.data(), x.data(), type, n);
    benchmark::DoNotOptimize(xq.data());
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / state.iterations();
  state.counters["ns"] = seconds * 1e9;
  seconds_per_case()[std::make_tuple(kt->which, type, 1, n, 1)] = seconds;
  const auto it = seconds_per_case().find(std::make_tuple(isa::scalar, type, 1, n, 1));
  if (it != seconds_per_case().end()) state.counters["ratio_vs_scalar"] = it->second / seconds;
}

// The bandwidth probe as a benchmark too, so its figure sits in the table next to the matmuls.
void bench_read_bandwidth(benchmark::State& state) {
  double gbps = 0.0;
  for (auto _ : state) gbps = bench::read_bandwidth_gbps(std::size_t{512} << 20, 3);
  state.counters["GB/s"] = gbps;
}

void register_benchmarks() {
  benchmark::RegisterBenchmark("membw/read_512MiB", bench_read_bandwidth)->Iterations(3)->Unit(benchmark::kMillisecond);
  const auto supported = kernel_tables_supported();
  // Scalar first (the list is best first), so its time is known when the faster ones run.
  const std::vector<const kernel_table*> tables(supported.rbegin(), supported.rend());
  for (const matmul_shape& shape : shapes)
    for (int n_tokens : token_counts)
      for (dtype type : weight_types)
        for (const kernel_table* kt : tables) {
          const std::string name = "matmul/" + std::to_string(shape.n_out) + "x" + std::to_string(shape.n_in) + "_" +
                                   shape.what + "/tokens:" + std::to_string(n_tokens) + "/" +
                                   std::string(dtype_name(type)) + "/" + std::string(isa_name(kt->which));
          benchmark::RegisterBenchmark(name.c_str(), bench_matmul, kt, type, shape, n_tokens)
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond)
              ->MinTime(0.2);
        }
  for (dtype type : {dtype::q4_0, dtype::q4_k})
    for (int n : {768, 2048})
      for (const kernel_table* kt : tables) {
        const std::string name = "quantize_activations/" + std::to_string(n) + "/" + std::string(dtype_name(type)) + "/" +
                                 std::string(isa_name(kt->which));
        benchmark::RegisterBenchmark(name.c_str(), bench_quantize_activations, kt, type, n)
            ->Unit(benchmark::kNanosecond)
            ->MinTime(0.1);
      }
  for (const matmul_shape& shape : block_shapes)
    for (int n_tokens : block_token_counts)
      for (dtype type : block_types)
        for (const kernel_table* kt : tables) {
          if (shape.n_out == classifier_rows && type != dtype::q6_k) continue;  // 5x the FFN shapes' run time
          const std::string name = "blocks/" + std::to_string(shape.n_out) + "x" + std::to_string(shape.n_in) + "_" +
                                   shape.what + "/tokens:" + std::to_string(n_tokens) + "/" +
                                   std::string(dtype_name(type)) + "/" + std::string(isa_name(kt->which));
          for (bool panels : {false, true}) {
            if (panels && !block_panels_pay(*kt, type)) continue;
            benchmark::RegisterBenchmark((name + (panels ? "_panels" : "")).c_str(), bench_block_matmul, kt, type, shape,
                                         n_tokens, panels)
                ->UseRealTime()
                ->Unit(benchmark::kMicrosecond)
                ->MinTime(0.2);
          }
        }
}

}  // namespace

int main(int argc, char** argv) {
  measured_bandwidth_gbps() = bench::read_bandwidth_gbps();
  benchmark::AddCustomContext("measured_read_bandwidth", std::to_string(measured_bandwidth_gbps()) + " GB/s");
  fp32_peak() = bench::fp32_peak_gops();
  int8_peak() = bench::int8_peak_gops();
  benchmark::AddCustomContext("measured_fp32_peak", std::to_string(fp32_peak()) + " GFLOP/s (zmm FMA)");
  benchmark::AddCustomContext("measured_int8_peak", std::to_string(int8_peak()) + " GOP/s (zmm vpdpbusd)");
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
