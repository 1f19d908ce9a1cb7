#pragma once
// Whether a request carries the server's API key: "Authorization: Bearer <key>", or, on a WebSocket
// upgrade (browsers cannot set headers there), the subprotocol "bearer.<base64url of the key>".
// Keys are compared in time that does not depend on where they differ.
#include <string_view>

namespace pagedserve::net {

// The headers the check reads; empty when absent.
struct api_key_headers {
  std::string_view authorization;
  std::string_view ws_protocols;  // Sec-WebSocket-Protocol, read on upgrades only
  bool upgrade = false;           // a WebSocket upgrade
};

// True when no key is configured or the request carries it.
bool api_key_accepted(std::string_view api_key, const api_key_headers& h);

}  // namespace pagedserve::net
