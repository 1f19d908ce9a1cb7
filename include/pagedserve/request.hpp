#pragma once
// What every layer agrees a request is: how it ends and what it used.
#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "pagedserve/ids.hpp"

namespace pagedserve {

enum class finish_reason { stop, length, cancelled, error };

constexpr std::string_view finish_reason_name(finish_reason r) {
  switch (r) {
    case finish_reason::stop: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::cancelled: return "cancelled";
    case finish_reason::error: return "error";
  }
  return "error";
}

struct usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  // Speculative decoding: tokens proposed for verification, and of them accepted (each one a decode
  // step saved). Both 0 when the request ran without speculation.
  int spec_draft_tokens = 0;
  int spec_accepted_tokens = 0;
};

// A prompt's token ids (or why it has none), rendered and tokenized once for all the samples of a
// sample_group, whichever of them gets there first.
struct shared_prompt {
  std::once_flag once;
  std::expected<std::vector<token_id>, std::string> tokens;
};

// Samples of one prompt in a request with n > 1. The first to reach the scheduler computes the prompt
// once all `size` of them have reached it; the others share its KV blocks (copy on write from the
// first block they write). Every one of the `size` members must be submitted to the engine: the first
// waits for the rest.
struct sample_group {
  std::uint64_t key = 0;  // the same for every sample of the prompt, unique to it
  int size = 1;
  std::shared_ptr<shared_prompt> prompt;  // null: each sample tokenizes on its own
};

}  // namespace pagedserve
