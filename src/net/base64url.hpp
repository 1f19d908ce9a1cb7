#pragma once
// RFC 4648 base64url without padding: every character is an HTTP token character, so a key of any
// bytes fits in a Sec-WebSocket-Protocol value.
#include <string>
#include <string_view>

namespace pagedserve::net {

std::string base64url(std::string_view bytes);

}  // namespace pagedserve::net
