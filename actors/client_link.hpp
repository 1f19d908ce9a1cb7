#pragma once
// How a request actor reaches its client's connection, whatever the transport: the WebSocket session
// and the HTTP/SSE session each implement it and encode these events in their own wire format.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

// The one final event of a request: finished (reason) or failed (error code and message).
struct final_event {
  std::optional<finish_reason> reason;  // none: failed
  usage used;
  request_timings timings;
  std::string error_code;     // stable, machine-readable (failed only)
  std::string error_message;  // for people (failed only)
};

class client_link {
 public:
  virtual ~client_link() = default;
  // Both may be called from any thread; the link serialises onto its connection's strand.
  virtual void send_tokens(const std::string& client_id, token_event event) = 0;
  // Exactly once per request, after its last send_tokens. The link then forgets client_id.
  virtual void send_final(const std::string& client_id, final_event event) = 0;
  // Who is asking, for fair admission and per-client quotas: the connection's remote address as a key
  // (all connections of one client share it); by default this link alone.
  virtual std::uint64_t client_key() const { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(this)); }
};

}  // namespace pagedserve
