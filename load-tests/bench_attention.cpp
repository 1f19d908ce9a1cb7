// ops::paged_attention against reference::paged_attention (the scalar two-pass loop, run in the same
// process as the baseline) on s110m's heads (12 x 64, no GQA) and TinyLlama's (32 query heads over 4
// kv heads x 64): decode steps of 1 and 16 sequences at the server's context (165 positions, as
// bench_decode's 101..228 cycle) and at 512, one prefill chunk deep in a long prompt, and decode steps of
// sequences of very unequal lengths (one of 2000 tokens beside 7 or 15 of 20: how the work items balance).
// Reports GFLOP/s (QK and AV: 4 FLOPs per head element per attended position), the K/V bytes a step
// must read at least once (every attended block of every kv head) per second, and ratio_vs_reference.
// Each table also runs over fp16 and q8 pools (…/f16, …/q8; ratio_vs_f32 against the same table's fp32
// run). The K/V lives in a real kv_cache (huge pages, the server's layout, sequences' blocks shuffled
// through the pool), and iterations walk enough layers (>= 128 MB) that K/V comes from memory as in a
// decode step, not from the last-level cache.
//
//   ./build/load-tests/bench_attention --benchmark_filter=ctx165
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kv/kv_cache.hpp"
#include "pagedserve/kernels.hpp"
#include "pagedserve/weight.hpp"

namespace {

using namespace pagedserve::kernels;

struct attention_case {
  const char* name;
  int n_heads, n_kv_heads, head_size;
  int n_seqs, context, tokens_per_seq;  // each sequence's step: its last tokens_per_seq positions
  int first_context = 0;                // > 0: the first sequence's context instead of `context`
  int seq_context(int s) const { return s == 0 && first_context > 0 ? first_context : context; }
};

constexpr attention_case cases[] = {
    {"s110m_decode1_ctx165", 12, 12, 64, 1, 165, 1},
    {"s110m_decode16_ctx165", 12, 12, 64, 16, 165, 1},
    {"tinyllama_decode1_ctx165", 32, 4, 64, 1, 165, 1},
    {"tinyllama_decode16_ctx165", 32, 4, 64, 16, 165, 1},
    {"s110m_decode16_ctx512", 12, 12, 64, 16, 512, 1},
    {"tinyllama_decode16_ctx512", 32, 4, 64, 16, 512, 1},
    {"s110m_prefill64_at_ctx2048", 12, 12, 64, 1, 2048, 64},
    {"tinyllama_prefill64_at_ctx2048", 32, 4, 64, 1, 2048, 64},
    {"s110m_decode8_ctx2000x1_20x7", 12, 12, 64, 8, 20, 1, 2000},
    {"s110m_decode16_ctx2000x1_20x15", 12, 12, 64, 16, 20, 1, 2000},
};

std::map<std::string, double>& baseline_seconds() {  // "<case>" (the reference), "<case>/<isa>" (fp32 K/V)
  static std::map<std::string, double> m;
  return m;
}

void bench(benchmark::State& state, attention_case c, const kernel_table* kt, pagedserve::dtype kv_type) {
  constexpr int block_size = 16;
  const int kv_dim = c.n_kv_heads * c.head_size, dim = c.n_heads * c.head_size;
  std::vector<std::int32_t> offsets, seq_of, pos_of;
  int n_blocks = 0, max_context = 0, total_context = 0;
  for (int s = 0; s < c.n_seqs; ++s) {
    offsets.push_back(n_blocks);
    n_blocks += (c.seq_context(s) + block_size - 1) / block_size;
    max_context = std::max(max_context, c.seq_context(s)), total_context += c.seq_context(s);
    for (int p = c.seq_context(s) - c.tokens_per_seq; p < c.seq_context(s); ++p) {
      seq_of.push_back(s);
      pos_of.push_back(p);
    }
  }
  const std::size_t layer_f32_bytes = 2 * sizeof(float) * static_cast<std::size_t>(n_blocks) * block_size * kv_dim;
  const int n_layers = static_cast<int>(std::max<std::size_t>(4, (std::size_t{128} << 20) / layer_f32_bytes + 1));
  const pagedserve::kv_cache cache(n_layers, n_blocks, block_size, c.n_kv_heads, c.head_size, kv_type);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> key(kv_dim), value(kv_dim);
  const kernel_table& store_table = kt ? *kt : *kernel_tables_supported().front();
  for (int l = 0; l < n_layers; ++l)
    for (int slot = 0; slot < n_blocks * block_size; ++slot) {
      for (float& f : key) f = dist(rng);
      for (float& f : value) f = dist(rng);
      cache.store(store_table, l, slot, key.data(), value.data());
    }
  std::vector<std::int32_t> tables(n_blocks);
  std::iota(tables.begin(), tables.end(), 0);
  std::shuffle(tables.begin(), tables.end(), rng);
  const int n_tokens = static_cast<int>(seq_of.size());
  std::vector<float> q(static_cast<std::size_t>(n_tokens) * dim), out(q.size());
  for (float& f : q) f = dist(rng);
  std::vector<paged_kv_layer> layers;
  for (int l = 0; l < n_layers; ++l) layers.push_back(cache.layer(l));
  const attention_batch batch{seq_of.data(), pos_of.data(), tables.data(), offsets.data(), n_tokens, max_context};

  std::size_t layer = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    const paged_kv_layer& kv = layers[layer++ % n_layers];
    if (kt) ops::paged_attention(*kt, out.data(), q.data(), kv, batch, c.n_heads, c.n_kv_heads, c.head_size);
    else reference::paged_attention(out.data(), q.data(), kv, batch, c.n_heads, c.n_kv_heads, c.head_size);
    benchmark::DoNotOptimize(out.data());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / state.iterations();
  double positions = 0;
  for (int p : pos_of) positions += p + 1;
  const double flops = 4.0 * positions * c.n_heads * c.head_size;
  const double kv_bytes = static_cast<double>(total_context) *
                          pagedserve::kv_cache::bytes_per_token(1, c.n_kv_heads, c.head_size, kv_type);
  state.counters["GFLOP/s"] = flops / seconds / 1e9;
  state.counters["KV_GB/s"] = kv_bytes / seconds / 1e9;
  const std::string name = kt ? std::string(c.name) + "/" + std::string(isa_name(kt->which)) : std::string(c.name);
  if (!kt) baseline_seconds()[name] = seconds;
  else if (auto it = baseline_seconds().find(c.name); it != baseline_seconds().end())
    state.counters["ratio_vs_reference"] = it->second / seconds;
  if (kt && kv_type == pagedserve::dtype::f32) baseline_seconds()[name] = seconds;
  if (kt && kv_type != pagedserve::dtype::f32)
    if (auto it = baseline_seconds().find(name); it != baseline_seconds().end())
      state.counters["ratio_vs_f32"] = it->second / seconds;
}

const bool registered = [] {
  for (const attention_case& c : cases) {
    benchmark::RegisterBenchmark((std::string(c.name) + "/reference").c_str(), bench, c, nullptr, pagedserve::dtype::f32)
        ->Unit(benchmark::kMillisecond);
    for (const kernel_table* kt : kernel_tables_supported()) {
      const std::string name = std::string(c.name) + "/" + std::string(isa_name(kt->which));
      benchmark::RegisterBenchmark(name.c_str(), bench, c, kt, pagedserve::dtype::f32)->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark((name + "/f16").c_str(), bench, c, kt, pagedserve::dtype::f16)
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark((name + "/q8").c_str(), bench, c, kt, pagedserve::dtype::i8)
          ->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
