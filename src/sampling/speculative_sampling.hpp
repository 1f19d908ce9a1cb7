#pragma once
// Speculative sampling (Leviathan et al. 2023; Chen et al. 2023): a proposed token, drawn from the
// proposer's distribution q, is accepted with probability min(1, p/q) under the target's p; when it
// is rejected the token is drawn from norm(max(0, p - q)). The emitted token is then distributed
// exactly as p, whatever q is, so speculation changes speed, never the output's distribution.
#include <random>
#include <span>

#include "pagedserve/ids.hpp"

namespace pagedserve {

// p: the target's probabilities [n_vocab], summing to 1. q: the proposer's [n_vocab]; empty for a
// deterministic proposer (q is a point mass on `proposed`: accept with probability p[proposed], else
// draw from p without it). Returns `proposed` when accepted, else the replacement, never `proposed`.
token_id speculative_sample(std::span<const float> p, std::span<const float> q, token_id proposed,
                            std::mt19937_64& rng);

}  // namespace pagedserve
