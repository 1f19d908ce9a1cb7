#include "sampling/candidate_selection.hpp"

#include <algorithm>
#include <bit>
#include <utility>

namespace pagedserve::sampling {
namespace {

constexpr int block = 16;
constexpr int small_enough = 1024;  // stop narrowing the threshold once this few tokens pass it
constexpr int max_passes = 4;
constexpr std::size_t radix_from = 1024;  // more keys than this: a radix sort rather than std::sort

// Sort key: larger p first, then lower id (p >= 0, so its bits order like its value).
std::uint64_t key_of(float p, token_id id) {
  return (std::uint64_t{0xFFFFFFFFu - std::bit_cast<std::uint32_t>(p)} << 32) | static_cast<std::uint32_t>(id);
}

// Whether the tokens at or above a threshold certainly contain the kept set's bound: top-k's k
// tokens, or (an estimate checked exactly later) top-p's mass.
struct bound_test {
  const cut_params& cut;
  int n;
  float target;  // top_p * sum
  bool operator()(int count, float mass) const {
    if (cut.top_k > 0 && cut.top_k < n && count >= cut.top_k) return true;
    return cut.top_p < 1.0f && mass >= target * 1.0002f;  // above the estimate's rounding
  }
};

// The highest threshold (at most a few passes to find) that passes the bound test, else `lowest`.
// The first pass tries fixed powers of two (a kept set's bound is usually within e^-20 of the most
// likely token); later ones split the bracket found, evenly in float bits (about evenly in log p).
float find_threshold(const float* p, int n, float lowest, const bound_test& enough, const probability_kernels& k) {
  static constexpr float first_pass[n_thresholds] = {0x1p-26f, 0x1p-18f, 0x1p-13f, 0x1p-9f,
                                                     0x1p-6f,  0x1p-4f,  0x1p-2f,  0x1p-1f};
  std::uint32_t lo = std::bit_cast<std::uint32_t>(lowest), hi = std::bit_cast<std::uint32_t>(1.0f) + 1;
  float thresholds[n_thresholds];
  int counts[n_thresholds];
  float masses[n_thresholds];
  for (int pass = 0; pass < max_passes && hi - lo > n_thresholds; ++pass) {
    const std::uint32_t step = (hi - lo) / (n_thresholds + 1);
    for (int t = 0; t < n_thresholds; ++t)
      thresholds[t] = pass == 0 ? std::max(first_pass[t], lowest) : std::bit_cast<float>(lo + step * (t + 1));
    k.stats_above(counts, masses, p, n, thresholds);
    int best = -1;
    for (int t = 0; t < n_thresholds; ++t)
      if (enough(counts[t], masses[t])) best = t;
    if (best < 0) {
      hi = std::bit_cast<std::uint32_t>(thresholds[0]);
      continue;
    }
    lo = std::bit_cast<std::uint32_t>(thresholds[best]);
    if (best + 1 < n_thresholds) hi = std::bit_cast<std::uint32_t>(thresholds[best + 1]);
    // Done when few tokens pass, or when no threshold in the bracket could halve them (a flat row).
    const int count_at_hi = best + 1 < n_thresholds ? counts[best + 1] : 0;
    if (counts[best] <= small_enough || 2 * count_at_hi >= counts[best]) break;
  }
  return std::bit_cast<float>(lo);
}

// Sorts keys ascending by bits 32-61 (a probability's bits, inverted; bits 62-63 are always set, as
// p < 2), stably: a least-significant-digit radix sort, 10 bits a pass, the three histograms counted in
// one read. Keys collected in id order keep ties in id order, as the full key's order has them.
void sort_keys(std::vector<std::uint64_t>& keys, std::vector<std::uint64_t>& scratch) {
  if (keys.size() <= radix_from) {
    std::sort(keys.begin(), keys.end());
    return;
  }
  constexpr int digit_bits = 10, digits = 3, buckets = 1 << digit_bits;
  std::uint32_t offset[digits][buckets] = {};
  for (std::uint64_t key : keys)
    for (int d = 0; d < digits; ++d) ++offset[d][(key >> (32 + digit_bits * d)) & (buckets - 1)];
  scratch.resize(keys.size());
  for (int d = 0; d < digits; ++d) {
    const int shift = 32 + digit_bits * d;
    if (offset[d][(keys[0] >> shift) & (buckets - 1)] == keys.size()) continue;  // one digit: nothing moves
    std::uint32_t start = 0;
    for (std::uint32_t& o : offset[d]) start += std::exchange(o, start);
    for (std::uint64_t key : keys) scratch[offset[d][(key >> shift) & (buckets - 1)]++] = key;
    keys.swap(scratch);
  }
}

// Sorts the tokens at or above `threshold` and applies the cuts in the order the definition does:
// top-k, then min-p's floor, then top-p's mass. Returns false when the cut may reach below the
// threshold (then the caller retries with all the row).
bool keep_above(kept_candidates& out, const float* p, int n, float sum, const cut_params& cut, float threshold,
                bool all, const probability_kernels& k) {
  out.p.resize(n + 15);
  out.id.resize(n + 15);
  const int m = k.collect_above(out.p.data(), out.id.data(), p, n, threshold);
  if (m == 0) {  // no finite probabilities: the caller falls back to the argmax
    out.kept = 0;
    return true;
  }
  out.keys.resize(m);
  for (int i = 0; i < m; ++i) out.keys[i] = key_of(out.p[i], out.id[i]);
  sort_keys(out.keys, out.sorted);
  for (int i = 0; i < m; ++i) {
    out.p[i] = std::bit_cast<float>(0xFFFFFFFFu - static_cast<std::uint32_t>(out.keys[i] >> 32));
    out.id[i] = static_cast<token_id>(out.keys[i] & 0xFFFFFFFFu);
  }
  // Exact when the kept set ends inside the sorted tokens at a cut that no token below the threshold
  // could pass: top-k's k-th token, min-p's floor (when not below the threshold), top-p's mass.
  std::size_t keep = m;
  bool bounded = all;
  if (cut.top_k > 0 && static_cast<std::size_t>(cut.top_k) <= keep) keep = cut.top_k, bounded = true;
  if (cut.min_p > 0.0f) {
    const float floor = cut.min_p * out.p[0];
    std::size_t kept = 1;
    while (kept < keep && out.p[kept] >= floor) ++kept;
    if (kept < keep || threshold <= floor) bounded = true;
    keep = kept;
  }
  if (cut.top_p < 1.0f) {
    const float target = cut.top_p * sum;
    float cumulative = 0.0f;
    std::size_t kept = 0;
    while (kept < keep) {
      cumulative += out.p[kept];
      ++kept;
      if (cumulative >= target) {
        bounded = true;
        break;
      }
    }
    keep = kept;
  }
  out.kept = keep;
  return bounded;
}

}  // namespace

void select_kept(kept_candidates& out, const float* p, int n, float sum, const cut_params& cut,
                 const probability_kernels& kernels) {
  // min-p keeps only tokens at or above its floor (the largest p is 1): nothing below it is sorted.
  const float lowest = cut.min_p > 0.0f ? std::min(cut.min_p, 1.0f) : 0.0f;
  const bool searchable = (cut.top_k > 0 && cut.top_k < n) || cut.top_p < 1.0f;  // min-p alone: its floor
  const float threshold = !searchable ? lowest : find_threshold(p, n, lowest, bound_test{cut, n, cut.top_p * sum}, kernels);
  if (!keep_above(out, p, n, sum, cut, threshold, threshold == 0.0f, kernels))
    keep_above(out, p, n, sum, cut, 0.0f, true, kernels);
}

float draw_mass(std::vector<float>& block_sums, const float* p, std::size_t n) {
  block_sums.resize((n + block - 1) / block);
  for (std::size_t b = 0; b < block_sums.size(); ++b) block_sums[b] = block_sum(p + b * block, static_cast<int>(n - b * block));
  return block_total(block_sums);
}

float block_total(const std::vector<float>& block_sums) {
  float total = 0.0f;
  for (float s : block_sums) total += s;
  return total;
}

std::size_t draw_index(const float* p, std::size_t n, const std::vector<float>& block_sums, float r) {
  float cumulative = 0.0f;
  for (std::size_t b = 0; b < block_sums.size(); ++b) {
    if (r < cumulative + block_sums[b]) {
      const std::size_t end = std::min(n, (b + 1) * block);
      std::size_t last_positive = b * block;
      for (std::size_t i = b * block; i < end; ++i) {
        cumulative += p[i];
        if (p[i] > 0.0f) last_positive = i;
        if (r < cumulative) return i;
      }
      return last_positive;
    }
    cumulative += block_sums[b];
  }
  std::size_t last = n - 1;
  while (last > 0 && !(p[last] > 0.0f)) --last;
  return last;
}

}  // namespace pagedserve::sampling
