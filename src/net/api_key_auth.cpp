#include "net/api_key_auth.hpp"

#include <boost/beast/core/string.hpp>

#include <string>

#include "net/base64url.hpp"
#include "net/net_common.hpp"

namespace pagedserve::net {
namespace {

// Equal strings in time that does not depend on where they differ.
bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

}  // namespace

bool api_key_accepted(std::string_view api_key, const api_key_headers& h) {
  if (api_key.empty()) return true;
  if (h.upgrade) {
    const std::string expected = std::string(ws_key_protocol_prefix) + base64url(api_key);
    bool match = false;
    for_each_ws_protocol(h.ws_protocols, [&](std::string_view p) { match = constant_time_equal(p, expected) || match; });
    if (match) return true;
  }
  constexpr std::string_view scheme = "Bearer ";
  const std::string_view value = h.authorization;
  if (value.size() <= scheme.size() || !beast::iequals(value.substr(0, scheme.size()), scheme)) return false;
  return constant_time_equal(value.substr(scheme.size()), api_key);
}

}  // namespace pagedserve::net
