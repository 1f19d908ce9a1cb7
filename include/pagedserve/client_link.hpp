#pragma once
// How a request actor reaches its client, whatever the transport: the connection gives each request
// a link of its own (the WebSocket session one per client id, the HTTP/SSE generation one per choice),
// which encodes these events in its wire format.
#include <cstdint>

#include "pagedserve/generation_events.hpp"

namespace pagedserve {

class client_link {
 public:
  virtual ~client_link() = default;
  // Both may be called from any thread; the link serialises onto its connection's strand.
  virtual void send_tokens(token_event event) = 0;
  // Exactly once per request, after its last send_tokens.
  virtual void send_final(final_event event) = 0;
  // Who is asking, for fair admission and per-client quotas: the connection's remote address as a key
  // (all connections of one client share it); by default this link alone.
  virtual std::uint64_t client_key() const { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(this)); }
};

}  // namespace pagedserve
