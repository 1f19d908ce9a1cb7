#include "spec/ngram_proposer.hpp"

#include <algorithm>

namespace pagedserve {

std::vector<token_id> ngram_propose(std::span<const token_id> tokens, const ngram_params& params, int n_max) {
  const int n_tokens = static_cast<int>(tokens.size());
  if (n_max <= 0) return {};
  for (int n = std::min(params.lookup_max, n_tokens - 1); n >= std::max(1, params.lookup_min); --n) {
    const auto suffix = tokens.subspan(n_tokens - n);
    // The latest earlier occurrence that is followed by n_max tokens (what followed it is the
    // likeliest continuation now), else the latest one (a match just behind the end, in a run).
    int latest = -1;
    for (int start = n_tokens - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      if (latest < 0) latest = start;
      if (n_tokens - (start + n) >= n_max) {
        latest = start;
        break;
      }
    }
    if (latest < 0) continue;
    const int from = latest + n, count = std::min(n_max, n_tokens - from);
    return {tokens.begin() + from, tokens.begin() + from + count};
  }
  return {};
}

}  // namespace pagedserve
