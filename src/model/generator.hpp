#pragma once
// Generates one sequence synchronously: the forward pass over a paged KV cache of its own, no actors.
// The CLI's `generate` uses it, and tests use it as the "run alone" reference for batched serving.
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "pagedserve/kernels.hpp"
#include "pagedserve/model.hpp"
#include "pagedserve/sampling.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagedserve {

struct generation {
  std::vector<token_id> prompt_ids;  // BOS first
  std::vector<token_id> generated;   // sampled ids; a final stop id (EOS or BOS) is included
  bool stopped = false;              // ended on a stop id rather than max_tokens or the context
};

// max_tokens 0 means "until the context is full". on_text receives UTF-8-complete text as it is
// produced (stop ids print nothing). prefill_chunk splits the prompt into chunks of that many tokens
// (0 = one chunk), exercising the chunked-prefill path. kv_type: the K/V cache's elements (f32, f16).
// constraint: masks every sampled token (structured output), as the executor's sampler does.
generation generate_sequence(const model& m, const tokenizer& tok, const kernels::kernel_table& kt,
                             const std::vector<token_id>& prompt_ids, const sampling_params& params,
                             std::uint64_t seed, const std::function<void(std::string_view)>& on_text = {},
                             int prefill_chunk = 0, dtype kv_type = dtype::f32,
                             std::unique_ptr<token_constraint> constraint = nullptr);

}  // namespace pagedserve
