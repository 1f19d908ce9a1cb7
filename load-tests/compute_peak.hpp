#pragma once
// The machine's peak multiply-add throughput, measured in the benchmark's own process like
// membw.hpp's bandwidth (the VM's share of the cores varies): every thread of the arena runs 12
// independent chains of one instruction, fp32 FMA on zmm or int8 vpdpbusd on zmm, best of several
// passes. Ops count 2 per multiply-add, as the matmul benchmarks do, so GOP/s over these is the
// fraction of peak a kernel reaches. 0 when this CPU lacks the instruction.
#include <immintrin.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>

namespace pagedserve::bench {

// 12 named accumulators (an array would live on the stack); the empty asm keeps each chain in a
// register and opaque, so nothing is folded or vectorised away.
#define PAGEDSERVE_PEAK_CHAINS(STEP)                                                                           \
  for (long i = 0; i < n; ++i) {                                                                               \
    STEP(a0) STEP(a1) STEP(a2) STEP(a3) STEP(a4) STEP(a5) STEP(a6) STEP(a7) STEP(a8) STEP(a9) STEP(a10) STEP(a11) \
    asm volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7), "+v"(a8),  \
                 "+v"(a9), "+v"(a10), "+v"(a11));                                                              \
  }

__attribute__((target("avx512f"))) inline float fma_chains_avx512(long n) {
  __m512 a0 = _mm512_set1_ps(1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0,
         a10 = a0, a11 = a0;
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
#define PAGEDSERVE_FMA(a) a = _mm512_fmadd_ps(a, m, c);
  PAGEDSERVE_PEAK_CHAINS(PAGEDSERVE_FMA)
#undef PAGEDSERVE_FMA
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                                       _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7))));
  alignas(64) float more[16];
  _mm512_store_ps(more, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  return lanes[0] + more[0];
}

__attribute__((target("avx512f,avx512vnni"))) inline int vnni_chains_avx512(long n) {
  __m512i a0 = _mm512_set1_epi32(1), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0,
          a10 = a0, a11 = a0;
  const __m512i x = _mm512_set1_epi8(3), w = _mm512_set1_epi8(-2);
#define PAGEDSERVE_DPBUSD(a) asm("vpdpbusd %2, %1, %0" : "+v"(a) : "v"(x), "v"(w));
  PAGEDSERVE_PEAK_CHAINS(PAGEDSERVE_DPBUSD)
#undef PAGEDSERVE_DPBUSD
  alignas(64) int lanes[16];
  _mm512_store_si512(lanes, _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)),
                                             _mm512_add_epi32(_mm512_add_epi32(a4, a5), _mm512_add_epi32(a6, a7))));
  alignas(64) int more[16];
  _mm512_store_si512(more, _mm512_add_epi32(_mm512_add_epi32(a8, a9), _mm512_add_epi32(a10, a11)));
  return lanes[0] + more[0];
}
#undef PAGEDSERVE_PEAK_CHAINS

// GOP/s of `chains(n)` on every thread at once; ops_per_iter counts one iteration of all 12 chains.
template <class F>
double peak_gops(F chains, double ops_per_iter, int passes = 5) {
  constexpr long n = 2'000'000;
  const int threads = tbb::this_task_arena::max_concurrency();
  double best = 0.0;
  for (int p = 0; p < passes; ++p) {
    const auto start = std::chrono::steady_clock::now();
    volatile double sink = 0.0;
    tbb::parallel_for(0, threads, [&](int) { sink = sink + chains(n); }, tbb::static_partitioner{});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, ops_per_iter * n * threads / s * 1e-9);
  }
  return best;
}

// fp32 FMA peak (zmm): 12 chains x 16 lanes x 2 ops per iteration.
inline double fp32_peak_gops() {
  if (!__builtin_cpu_supports("avx512f")) return 0.0;
  return peak_gops(fma_chains_avx512, 12 * 16 * 2);
}

// int8 peak (zmm vpdpbusd): 12 chains x 64 multiply-adds x 2 ops per iteration.
inline double int8_peak_gops() {
  if (!__builtin_cpu_supports("avx512vnni")) return 0.0;
  return peak_gops(vnni_chains_avx512, 12 * 64 * 2);
}

}  // namespace pagedserve::bench
