#pragma once
// The per-row passes of temperature sampling over a vocabulary of logits: the unnormalised
// probabilities with their sum, and counts/masses above thresholds to bound the candidates a
// top-k/top-p/min-p cut can keep. An AVX-512 variant and a portable one, chosen at start-up from the
// CPU; both give the same bits (same operations in the same order), so a draw never depends on
// the machine's ISA, on the batch, or on the thread that samples the row.
#include <cstdint>

#include "pagedserve/ids.hpp"

namespace pagedserve::sampling {

inline constexpr int probability_lanes = 16;  // the sum's lanes: the same in both variants
inline constexpr int n_thresholds = 8;        // thresholds per stats pass

struct probability_kernels {
  // The largest of logits[n], NaNs skipped (-inf when every one is NaN): the value argmax() picks.
  float (*row_max)(const float* logits, int n);
  // p[n] = exp((logits[i] - max_logit) * inv_temperature), 0 where that is NaN or below e^-87 (so a
  // NaN logit is never drawn); block_sums[(n + 15) / 16] (null: not wanted): each block of 16
  // summed by block_sum();
  // returns the sum of p in `probability_lanes` lanes, lanes added in order.
  float (*probabilities)(float* p, float* block_sums, const float* logits, int n, float max_logit,
                         float inv_temperature);
  // For each of the n_thresholds thresholds t: how many p[i] >= t and their total (a bound-finding
  // estimate, not an exact sum).
  void (*stats_above)(int* counts, float* masses, const float* p, int n, const float* thresholds);
  // Writes the p[i] >= threshold and their ids, in id order; returns how many. values and ids have
  // room for n + 15 entries (a variant may write whole vectors past the last one it keeps).
  int (*collect_above)(float* values, token_id* ids, const float* p, int n, float threshold);
  const char* name;
};

const probability_kernels& portable_probability_kernels();
const probability_kernels* avx512_probability_kernels();  // null when the CPU lacks AVX-512 (F, BW, DQ)
const probability_kernels& best_probability_kernels();    // AVX-512 where the CPU has it

// The sum of 16 values (zeros past `count`) by a fixed tree: halves added lane by lane, 8 + 8, 4 + 4,
// 2 + 2, 1 + 1, as a vector register folds.
float block_sum(const float* p, int count);

// The scalar exp both variants compute, lane for lane: x <= 0 (larger x is clamped to 0).
float exp_nonpositive(float x);

}  // namespace pagedserve::sampling
