#pragma once
// What a temperature draw keeps of a row of probabilities under top-k, min-p and top-p, and the draw
// itself. The kept set, its order (most likely first, ties by lower id) and the draw are exactly what
// sorting the whole row would give; only the few tokens that can be kept are sorted: a threshold
// found from counts and masses above candidate thresholds bounds them, and is lowered to all the
// row in the rare case the bound was too tight.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pagedserve/ids.hpp"
#include "sampling/probability_row.hpp"

namespace pagedserve::sampling {

struct cut_params {
  int top_k = 0;        // 0 = all
  float top_p = 1.0f;   // 1 = all
  float min_p = 0.0f;   // 0 = all
  bool truncates(int n) const { return (top_k > 0 && top_k < n) || top_p < 1.0f || min_p > 0.0f; }
};

// The kept tokens, most likely first: kept_p[0, kept) and kept_id[0, kept). Reused scratch.
struct kept_candidates {
  std::vector<float> p;
  std::vector<token_id> id;
  std::vector<std::uint64_t> keys, sorted;  // sort keys, scratch
  std::size_t kept = 0;
};

// p[n]: unnormalised probabilities whose largest is exactly 1, `sum` their sum (probability_row.hpp).
void select_kept(kept_candidates& out, const float* p, int n, float sum, const cut_params& cut,
                 const probability_kernels& kernels);

// The draw walks the candidates in order: the first whose running total exceeds r. The total is
// taken block by block (block_sum() of 16 candidates, blocks in order), so finding the block costs
// n / 16 additions. draw_mass fills block_sums and returns the total r is drawn below;
// block_total only adds up block sums already there (probability_kernels::probabilities').
float draw_mass(std::vector<float>& block_sums, const float* p, std::size_t n);
float block_total(const std::vector<float>& block_sums);
// The candidate r falls on; where rounding leaves r past every running total, the last positive one.
std::size_t draw_index(const float* p, std::size_t n, const std::vector<float>& block_sums, float r);

}  // namespace pagedserve::sampling
