#pragma once
// HTTP(S) GET for the hub: follows redirects (301/302/303/307/308, absolute or relative Location),
// drops the Authorization header when a redirect leaves the origin (a CDN's signed URL must not
// receive the user's token), and hands back every hop's headers plus a reader for the final body.
// HTTPS verifies the server's certificate against the system store (or SSL_CERT_FILE/SSL_CERT_DIR)
// and its host name, with SNI. Blocking calls, each bounded by a timeout; Beast stays inside the .cpp.
#include <chrono>
#include <cstddef>
#include <expected>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace pagedserve {

using hub_headers = std::vector<std::pair<std::string, std::string>>;

// One response on the way: a redirect, or the final answer.
struct hub_http_hop {
  std::string url;                             // the URL this response answered
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
  bool redirect() const { return status == 301 || status == 302 || status == 303 || status == 307 || status == 308; }
};

// Reads the final response's body; the connection closes with it.
class hub_http_body {
 public:
  virtual ~hub_http_body() = default;
  // Up to out.size() bytes; 0 once the body is complete. An error (the server closed early, a
  // timeout) says how many body bytes had arrived.
  virtual std::expected<std::size_t, std::string> read(std::span<char> out) = 0;
  // A short error body (an error page), at most `limit` bytes; what arrived when a read fails.
  std::string read_text(std::size_t limit = 4096);
  // The body up to `limit` bytes, or why a read failed before its end.
  std::expected<std::string, std::string> read_all(std::size_t limit);
};

struct hub_http_response {
  std::vector<hub_http_hop> hops;  // in order; the last is the final response
  std::unique_ptr<hub_http_body> body;
  const hub_http_hop& final_hop() const { return hops.back(); }
};

struct hub_http_options {
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds read_timeout{60'000};
  int max_redirects = 10;
};

// GET url with headers; errors are network-level (DNS, connect, TLS, timeouts, bad redirects),
// never an HTTP status, which the caller reads from the final hop.
std::expected<hub_http_response, std::string> hub_http_get(const std::string& url, const hub_headers& headers,
                                                           const hub_http_options& options);

}  // namespace pagedserve
