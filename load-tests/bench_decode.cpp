// Decode of the s110m shape (perf.md: 768/2048/12 layers/12 heads/vocab 32000, tied classifier,
// random weights) with fp32, bf16 and int8 weights at 1, 16 and 64 streams, and of the tinyllama
// shape (perf.md: 2048/5632/22 layers/32 heads/4 kv heads/vocab 32000, untied) with int8 weights at
// 1 and 16 streams, against the bandwidth limit the issue sets: limit tok/s = measured read bandwidth / weight bytes read per token (every matrix and
// the classifier, not the embedding lookup), goal >= 0.85 of it. The bandwidth is measured in this
// process (membw.hpp) right before each format's run, since it drifts on this VM.
// "roofline" (docs/roofline.md) is the same ratio against weights plus the K/V the step reads (each
// sequence's attended positions times the KV element size): the distance to the machine's limit once
// attention counts, reported for the f32 KV cache and, on s110m int8, for f16, q8, fp8_e4m3 and fp8_e5m2.
// "split" counters: ms per step of each phase of the forward pass (forward_phase_times, timed over
// extra steps after the run) and, for the matmul phases of dense models, the GB/s their weights
// stream at (for attention, the GB/s of the K/V it reads); "join_us": one empty two-way static
// parallel_for (a thread join) in this arena.
// "paired" counters (paired_counters): the weights' GB/s in ~25 ms windows against a short probe on
// either side of each, so a run the bandwidth state flipped under still gives its ratio in each state.
// With int8 weights also "compute_roof" (the matmuls at the vpdpbusd peak measured here, over the step)
// and "bound" (the larger of the two roofs over the step): how close a step is to what the machine allows.
//
//   ./build/load-tests/bench_decode                    # writes $PAGEDSERVE_S110M (/tmp/s110m.bin) once
//   ./build/load-tests/bench_decode --benchmark_filter=s110m/int8
//   ./build/load-tests/bench_decode --benchmark_filter=tinyllama   # writes $PAGEDSERVE_TINYLLAMA
//                                                                  # (/tmp/tinyllama.bin, 4.4 GB) once
//   PAGEDSERVE_DECODE_FILE=M.gguf ./build/load-tests/bench_decode --benchmark_filter=file/
//       # any model file (model_load_any), as loaded and as int8, 1 and 16 streams (quant_vs_llama_cpp.sh),
//       # and as loaded at 1 stream with the q8 KV cache (file/as_loaded/kv_q8/streams:1)
//   PAGEDSERVE_BENCH_KERNELS=avx2 [PAGEDSERVE_BENCH_ROWS=1] ...: another table, and layout (bench_table.hpp)
#include <benchmark/benchmark.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <expected>
#include <memory>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_decoder.hpp"
#include "compute_peak.hpp"
#include "model_shapes.hpp"
#include "membw.hpp"
#include "pagedserve/model.hpp"
#include "model/model_load.hpp"

namespace {

using namespace pagedserve;

// A benchmarked shape and the checkpoint file that holds it.
struct shape {
  const char* name;
  model_config config;
  std::filesystem::path checkpoint;
};

// Writes the shape's random checkpoint unless it is there already.
bool checkpoint_ensure(const shape& s) {
  if (std::filesystem::exists(s.checkpoint)) return true;
  std::printf("writing %s (random %s weights)...\n", s.checkpoint.c_str(), s.name);
  std::fflush(stdout);
  if (auto r = llama2c_write_random(s.checkpoint, s.config, 1); !r) {
    std::fprintf(stderr, "bench_decode: %s\n", r.error().c_str());
    return false;
  }
  return true;
}

// The model of the last case, kept for the next: the benchmark library runs a case several times
// (to size its iterations, then once per repetition), and quantizing tinyllama takes seconds.
std::expected<std::shared_ptr<const model>, std::string> model_converted(const shape& s, weight_format format) {
  static const shape* last_shape = nullptr;
  static weight_format last_format = weight_format::as_stored;
  static std::shared_ptr<const model> last;
  if (last && last_shape == &s && last_format == format) return last;
  last.reset();  // free the previous one first: tinyllama's copies do not all fit twice
  model_load_options options;
  options.weights = format;  // converted while loading: no second copy of a dequantized file
  auto loaded = model_load_any(s.checkpoint, options);
  if (!loaded) return std::unexpected(loaded.error());
  last_shape = &s, last_format = format, last = bench::model_for_bench_table(std::move(*loaded));
  return last;
}

// The int8 vpdpbusd peak of this process's arena (compute_peak.hpp), measured once: 0 without VNNI.
double int8_peak_gops() {
  static const double gops = bench::int8_peak_gops();
  return gops;
}

// Weight bytes each matmul phase of a dense model's step reads (0 for the other phases).
std::array<double, forward_phase_times::n_phases> phase_weight_bytes(const model& m) {
  std::array<double, forward_phase_times::n_phases> bytes{};
  using p = forward_phase_times::phase;
  const auto b = [](const weight& w) { return static_cast<double>(w.n_bytes()); };
  for (const layer_weights& l : m.layers) {
    if (l.is_moe()) return {};
    bytes[p::qkv] += b(l.wq) + b(l.wk) + b(l.wv);
    bytes[p::wo] += b(l.wo);
    bytes[p::ffn_up] += b(l.w_gate) + b(l.w_up);
    bytes[p::ffn_down] += b(l.w_down);
  }
  bytes[p::classifier] = b(m.classifier);
  return bytes;
}

// Microseconds of one empty two-way static parallel_for: what each join of a decode step costs at least.
double join_microseconds() {
  constexpr int n = 2000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i)
    tbb::parallel_for(tbb::blocked_range<int>(0, 2), [](const tbb::blocked_range<int>&) {}, tbb::static_partitioner{});
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / n;
}

// <prefix>ms_<phase>: each phase's ms per step of `times`; <prefix>GB/s_<phase>: the GB/s its weights
// stream at, for the matmul phases of dense models.
void phase_counters(benchmark::State& state, const std::string& prefix, const forward_phase_times& times,
                    const model& m) {
  const auto bytes = phase_weight_bytes(m);
  for (int p = 0; p < forward_phase_times::n_phases; ++p) {
    const double seconds = std::chrono::duration<double>(times.total[p]).count() / times.steps;
    state.counters[prefix + "ms_" + forward_phase_times::names[p]] = seconds * 1e3;
    if (bytes[p] > 0 && seconds > 0) state.counters[prefix + "GB/s_" + forward_phase_times::names[p]] = bytes[p] / seconds * 1e-9;
  }
}

// The split counters (see the top of the file), over `steps` more steps of d.
void split_counters(benchmark::State& state, bench::decoder& d, const model& m, int steps) {
  forward_phase_times times;
  d.set_phase_times(&times);
  for (int i = 0; i < steps; ++i) d.step();
  d.set_phase_times(nullptr);
  phase_counters(state, "", times, m);
  // Attention streams the step's K/V: its GB/s beside the matmuls' (at the bandwidth probe: bandwidth-bound).
  const double attention_seconds =
      std::chrono::duration<double>(times.total[forward_phase_times::attention]).count() / times.steps;
  if (attention_seconds > 0) state.counters["GB/s_attention"] = d.kv_bytes_per_step() / attention_seconds * 1e-9;
  state.counters["join_us"] = join_microseconds();
}

// The bandwidth flips between states within seconds on this VM (perf.md), so one probe before a
// 2-second run may not be the state the run saw. Here the step runs in windows of ~25 ms, each between
// two short probes (128 MB slices of one buffer), and each window's weight GB/s is compared with the
// mean of its two probes: `paired_ratio` is the median of those ratios, `ratio_at_top` the median over
// the windows whose probes both read within 10 % of the run's best probe (`top_bw_GB/s`): the ratio in
// the fast state when the run saw it (`top_windows` of `windows`), with those windows' split
// (`top_ms_<phase>`, `top_GB/s_<phase>`).
void paired_counters(benchmark::State& state, bench::decoder& d, const model& m, double bytes_per_step) {
  static bench::read_probe probe;
  constexpr std::size_t probe_bytes = std::size_t{128} << 20;
  constexpr int n_windows = 40;
  constexpr double window_seconds = 0.025;
  struct window {
    double ratio, bw, low_bw;
    forward_phase_times times;
  };
  const auto run_window = [&](int steps, window& w) {
    d.set_phase_times(&w.times);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) d.step();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    d.set_phase_times(nullptr);
    return seconds;
  };
  window sizing{};
  const int steps = std::max(1, static_cast<int>(window_seconds / (run_window(5, sizing) / 5)));
  std::vector<window> windows;
  double before = probe.read_gbps(probe_bytes);
  for (int i = 0; i < n_windows; ++i) {
    window w{};
    const double gbps = bytes_per_step * steps / run_window(steps, w) * 1e-9;
    const double after = probe.read_gbps(probe_bytes);
    w.bw = (before + after) / 2, w.low_bw = std::min(before, after), w.ratio = gbps / w.bw;
    if (w.bw > 0) windows.push_back(w);
    before = after;
  }
  if (windows.empty()) return;
  const auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  double top = 0;
  std::vector<double> all, at_top;
  forward_phase_times top_times;
  for (const window& w : windows) top = std::max(top, w.bw), all.push_back(w.ratio);
  for (const window& w : windows) {
    if (w.low_bw < 0.9 * top) continue;
    at_top.push_back(w.ratio);
    for (int p = 0; p < forward_phase_times::n_phases; ++p) top_times.total[p] += w.times.total[p];
    top_times.steps += w.times.steps;
  }
  state.counters["paired_ratio"] = median(all);
  state.counters["top_bw_GB/s"] = top;
  state.counters["top_windows"] = static_cast<double>(at_top.size());
  state.counters["windows"] = static_cast<double>(windows.size());
  if (at_top.empty()) return;
  state.counters["ratio_at_top"] = median(at_top);
  phase_counters(state, "top_", top_times, m);
}

void bench_decode(benchmark::State& state, const shape* s, weight_format format, int streams, dtype kv_type) {
  if (s->config.dim > 0 && !checkpoint_ensure(*s)) {
    state.SkipWithError("cannot write the checkpoint");
    return;
  }
  auto m = model_converted(*s, format);
  if (!m) {
    state.SkipWithError(m.error().c_str());
    return;
  }
  bench::decoder d(**m, streams, kv_type);
  for (int i = 0; i < 3; ++i) d.step();  // pages in a mapped fp32 file before timing
  const double gbps = bench::read_bandwidth_gbps();
  for (auto _ : state) d.step();
  split_counters(state, d, **m, 50);
  const double bytes = d.bytes_per_step();
  paired_counters(state, d, **m, bytes);
  const double limit = gbps * 1e9 / bytes * streams;
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(streams), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["MB/token"] = bytes * 1e-6 / streams;
  state.counters["bw_GB/s"] = gbps;
  state.counters["limit_tok/s"] = limit;
  // Filled in after the run from the measured rate: tok/s / limit.
  state.counters["ratio"] = benchmark::Counter(static_cast<double>(streams) / limit, benchmark::Counter::kIsIterationInvariantRate);
  const double kv_bytes = d.kv_bytes_per_step();
  state.counters["KV_MB/step"] = kv_bytes * 1e-6;
  // Seconds the step's weight and K/V reads take at the measured bandwidth, over the step's seconds.
  const double memory_seconds = (bytes + kv_bytes) / (gbps * 1e9);
  state.counters["roofline"] = benchmark::Counter(memory_seconds, benchmark::Counter::kIsIterationInvariantRate);
  // int8 weights: the matmuls' seconds at the vpdpbusd peak measured in this process over the step's
  // seconds, and the bound that counts both roofs (docs/roofline.md: past a few streams W8A8 decode is
  // compute-bound on this machine, so memory alone is not the limit).
  if (format == weight_format::int8) {
    if (const double peak = int8_peak_gops(); peak > 0) {
      const double compute_seconds = d.matmul_ops_per_step() / (peak * 1e9);
      state.counters["peak_GOP/s"] = peak;
      state.counters["compute_roof"] =
          benchmark::Counter(compute_seconds, benchmark::Counter::kIsIterationInvariantRate);
      state.counters["bound"] = benchmark::Counter(std::max(memory_seconds, compute_seconds),
                                                   benchmark::Counter::kIsIterationInvariantRate);
    }
  }
}

std::filesystem::path path_from_env(const char* name, const char* fallback) {
  const char* env = std::getenv(name);
  return env ? env : fallback;
}

void register_decode(const shape& s, const char* format_name, weight_format format, int streams,
                     dtype kv_type = dtype::f32) {
  const std::string kv = kv_type == dtype::f32 ? "" : "/kv_" + std::string(kv_cache_type_name(kv_type));
  benchmark::RegisterBenchmark(
      ("decode/" + std::string(s.name) + "/" + format_name + kv + "/streams:" + std::to_string(streams)).c_str(),
      bench_decode, &s, format, streams, kv_type)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(2.0);
}

}  // namespace

int main(int argc, char** argv) {
  // Checkpoints are written on first use, so a filter that skips tinyllama never writes its 4.4 GB.
  static const shape small{"s110m", bench::s110m(), path_from_env("PAGEDSERVE_S110M", "/tmp/s110m.bin")};
  static const shape large{"tinyllama", bench::tinyllama(), path_from_env("PAGEDSERVE_TINYLLAMA", "/tmp/tinyllama.bin")};
  for (auto [name, format] : {std::pair{"f32", weight_format::as_stored}, std::pair{"bf16", weight_format::bf16},
                              std::pair{"int8", weight_format::int8}})
    for (int streams : {1, 16, 64}) register_decode(small, name, format, streams);
  for (dtype kv_type : kv_cache_types)
    if (kv_type != dtype::f32)
      for (int streams : {1, 16, 64}) register_decode(small, "int8", weight_format::int8, streams, kv_type);
  for (int streams : {1, 16}) register_decode(large, "int8", weight_format::int8, streams);
  // A given file (its shape comes from the file, so config.dim stays 0 and nothing is written).
  static const shape file{"file", model_config{}, path_from_env("PAGEDSERVE_DECODE_FILE", "")};
  if (!file.checkpoint.empty()) {
    for (auto [name, format] : {std::pair{"as_loaded", weight_format::as_stored}, std::pair{"int8", weight_format::int8}})
      for (int streams : {1, 16}) register_decode(file, name, format, streams);
    // Batch 1 with the q8 KV cache: a quarter of f32's K/V bytes, which cap the weights-only ratio of a
    // small model (docs/batch1-decode.md).
    register_decode(file, "as_loaded", weight_format::as_stored, 1, dtype::i8);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
