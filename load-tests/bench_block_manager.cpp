// The KV allocator's free path: one request's blocks returned to the pool, with and without the
// whole-pool invariant check the actor used to run after every free (O(blocks + table entries)).
// The pool is n_blocks of 16 tokens, half of it held by 512-token sequences, as a busy server's.
//
//   ./build/load-tests/bench_block_manager
#include <benchmark/benchmark.h>

#include <vector>

#include "kv/block_manager.hpp"

namespace {

using namespace pagedserve;

constexpr int block_size = 16;
constexpr int seq_tokens = 512;

// A pool with half its blocks held by live sequences (ids 1..), their prompts committed.
block_manager busy_pool(int n_blocks) {
  block_manager m(n_blocks, block_size);
  std::vector<token_id> tokens(seq_tokens);
  const int n_live = n_blocks / 2 / (seq_tokens / block_size);
  for (int s = 0; s < n_live; ++s) {
    for (int i = 0; i < seq_tokens; ++i) tokens[i] = s * seq_tokens + i;
    const request_id id{static_cast<std::uint64_t>(s + 1)};
    m.match_prefix(id, tokens, 0);
    m.ensure_capacity(id, seq_tokens);
    m.commit_full_blocks(id, 0, tokens);
  }
  return m;
}

// One iteration: a request takes 512 tokens' blocks and frees them.
void bench_free(benchmark::State& state, bool full_check) {
  const int n_blocks = static_cast<int>(state.range(0));
  block_manager m = busy_pool(n_blocks);
  const request_id id{1u << 30};
  for (auto _ : state) {
    state.PauseTiming();
    m.ensure_capacity(id, seq_tokens);
    state.ResumeTiming();
    benchmark::DoNotOptimize(m.free_sequence(id));
    if (full_check) benchmark::DoNotOptimize(m.find_invariant_violation());
  }
  state.SetItemsProcessed(state.iterations());
}

void free_only(benchmark::State& state) { bench_free(state, false); }
void free_with_full_check(benchmark::State& state) { bench_free(state, true); }

BENCHMARK(free_only)->Arg(1024)->Arg(16384)->Arg(65536);
BENCHMARK(free_with_full_check)->Arg(1024)->Arg(16384)->Arg(65536);

}  // namespace

BENCHMARK_MAIN();
