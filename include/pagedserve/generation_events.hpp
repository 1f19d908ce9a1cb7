#pragma once
// What a client hears of its generation: new tokens, then exactly one final event. Vocabulary shared
// by the request actors that send them and the encoders (WebSocket, OpenAI/SSE) that write them.
#include <optional>
#include <string>
#include <vector>

#include "pagedserve/engine_error.hpp"
#include "pagedserve/ids.hpp"
#include "pagedserve/request.hpp"
#include "pagedserve/sampling.hpp"

namespace pagedserve {

// New output of a request: text that is complete UTF-8, and the ids it came from.
struct token_event {
  std::string text;
  std::vector<token_id> ids;
  std::vector<token_logprobs> logprobs;  // one per id when the request asked for logprobs, else empty
};

// Request timings, as the client should see them (milliseconds; tokens per second).
struct request_timings {
  double time_to_first_token_ms = 0;  // accepted -> first token sampled
  double total_ms = 0;                // accepted -> finished
  double tokens_per_second = 0;       // generated tokens after the first, per second
};

// The one final event of a request: finished (reason) or failed (error).
struct final_event {
  std::optional<finish_reason> reason;  // none: failed
  usage used;
  request_timings timings;
  engine_failure error;  // failed only
};

}  // namespace pagedserve
