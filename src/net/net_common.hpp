#pragma once
// Names shared by the listener and the HTTP and WebSocket sessions.
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pagedserve::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

// Extra response header fields, name and value, in order.
using header_list = std::vector<std::pair<std::string, std::string>>;

// WebSocket subprotocols of /v1/ws. A browser cannot set Authorization on a WebSocket, so it offers
// ["pagedserve", "bearer.<base64url of the API key>"]; the server selects "pagedserve" (never echoing
// the key), as a browser fails a socket whose offered subprotocols were all ignored.
constexpr std::string_view ws_protocol_name = "pagedserve";
constexpr std::string_view ws_key_protocol_prefix = "bearer.";

// Calls f with each comma-separated item of a Sec-WebSocket-Protocol value, spaces trimmed.
template <class F>
void for_each_ws_protocol(std::string_view value, F&& f) {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    std::string_view item = value.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (!item.empty()) f(item);
    value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
  }
}

}  // namespace pagedserve::net
