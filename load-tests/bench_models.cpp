// Load time, resident memory and decode speed of Hugging Face models at real shapes with random
// weights (bf16 on disk, kept bf16 in memory): Qwen3-0.6B's shape and a scaled-down Qwen3-MoE.
// Folders are generated once into $PAGEDSERVE_BENCH_DIR (default /tmp/pagedserve_bench_models).
//
//   ./build/load-tests/bench_models                      # both models, 1 and 16 streams
//   ./build/load-tests/bench_models --benchmark_filter=moe
//
// Before the benchmarks it prints, per model: load seconds, RSS after load (file-backed pages are
// only touched by the first forward pass, so it is small) and RSS after one decode step. Each
// benchmark iteration is one decode step of `streams` sequences; tok/s counts their tokens, and
// "GB/s" is the weight bytes a step must read (every matrix once; for MoE only the experts the
// step's tokens chose) divided by the step time.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <algorithm>
#include <string>

#include "model/forward.hpp"
#include "model/hf_model.hpp"
#include "kv/kv_cache.hpp"
#include "bench_decoder.hpp"

namespace {

using namespace pagedserve;

struct bench_model {
  std::string name;
  model_config config;
  std::shared_ptr<const model> weights;
};

model_config qwen3_0_6b() {
  model_config c;
  c.architecture = "Qwen3ForCausalLM";
  c.dim = 1024, c.hidden_dim = 3072, c.n_layers = 28, c.n_heads = 16, c.n_kv_heads = 8, c.head_dim = 128;
  c.vocab_size = 151936, c.seq_len = 40960, c.rope_theta = 1e6f, c.rms_norm_eps = 1e-6f, c.shared_classifier = true;
  return c;
}

// Qwen3-30B-A3B's expert layout (64 -> 128 experts there, top-8, 768-wide experts) scaled to fit.
model_config qwen3_moe_small() {
  model_config c;
  c.architecture = "Qwen3MoeForCausalLM";
  c.dim = 1024, c.n_layers = 8, c.n_heads = 16, c.n_kv_heads = 4, c.head_dim = 128;
  c.n_experts = 64, c.n_experts_used = 8, c.expert_hidden_dim = 256, c.norm_topk_prob = true;
  c.vocab_size = 151936, c.seq_len = 40960, c.rope_theta = 1e6f, c.rms_norm_eps = 1e-6f, c.shared_classifier = false;
  return c;
}

// kB of a /proc/self/status field (VmRSS, RssAnon, RssFile).
long status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return std::strtol(line.c_str() + field.size() + 1, nullptr, 10);
  return -1;
}

std::string rss_text() {
  char buf[128];
  std::snprintf(buf, sizeof buf, "RSS %.0f MiB (anon %.0f, file %.0f)", status_kb("VmRSS") / 1024.0,
                status_kb("RssAnon") / 1024.0, status_kb("RssFile") / 1024.0);
  return buf;
}

void bench_decode(benchmark::State& state, const bench_model* bm, int streams) {
  bench::decoder d(*bm->weights, streams);
  for (auto _ : state) d.step();
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(streams), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] = benchmark::Counter(d.bytes_per_step() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

std::vector<bench_model>& models() {
  static std::vector<bench_model> v;
  return v;
}

void prepare(const std::filesystem::path& root) {
  for (auto [name, config] : {std::pair{"qwen3_0.6b_shape", qwen3_0_6b()}, std::pair{"qwen3_moe_64x8", qwen3_moe_small()}}) {
    const auto dir = root / name;
    if (!std::filesystem::exists(dir / "config.json")) {
      std::printf("writing %s (random bf16 weights)...\n", dir.c_str());
      std::fflush(stdout);
      if (auto r = hf_folder_write_random(dir, config, dtype::bf16, 1); !r) {
        std::fprintf(stderr, "bench_models: %s\n", r.error().c_str());
        std::exit(1);
      }
    }
    const std::string before = rss_text();
    const auto t0 = std::chrono::steady_clock::now();
    auto m = hf_model_load(dir);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!m) {
      std::fprintf(stderr, "bench_models: %s\n", m.error().c_str());
      std::exit(1);
    }
    const std::string after_load = rss_text();
    { bench::decoder(**m, 1).step(); }  // touches every dense weight once (and the experts the tokens chose)
    std::printf("%-18s load %.3f s | before: %s | after load: %s | after first steps: %s | file %.0f MiB\n", name,
                seconds, before.c_str(), after_load.c_str(), rss_text().c_str(),
                std::filesystem::file_size(dir / "model.safetensors") / 1048576.0);
    models().push_back({name, config, std::move(*m)});
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const char* dir = std::getenv("PAGEDSERVE_BENCH_DIR");
  prepare(dir ? dir : "/tmp/pagedserve_bench_models");
  for (const bench_model& bm : models())
    for (int streams : {1, 16})
      benchmark::RegisterBenchmark(("decode/" + bm.name + "/streams:" + std::to_string(streams)).c_str(), bench_decode,
                                   &bm, streams)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(3.0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
