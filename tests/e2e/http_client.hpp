#pragma once
// A tiny HTTP/1.1 GET over Beast for end-to-end tests, bounded by a deadline (tcp_stream's
// expiry: Asio's blocking calls ignore socket timeouts, so the exchange runs asynchronously on a
// private io_context), and /health read into a struct with simdjson. Deadlines here and in the other
// e2e clients stretch by PAGEDSERVE_TEST_TIME_SCALE (support/sanitizer_env.hpp).
#include <simdjson.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <expected>
#include <string>
#include <thread>

#include "support/sanitizer_env.hpp"

namespace pagedserve::e2e {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct http_response {
  int status = 0;
  std::string content_type;
  std::string body;
};

// GET target from 127.0.0.1:port; an error string on connect/IO failure or timeout.
inline std::expected<http_response, std::string> http_get(unsigned short port, const std::string& target,
                                                          std::chrono::milliseconds timeout = std::chrono::seconds(2)) {
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  beast::flat_buffer buffer;
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.keep_alive(false);
  http::response<http::string_body> res;
  beast::error_code result = asio::error::would_block;
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
  stream.expires_after(test::scaled(timeout));  // one deadline for connect, write and read together
  stream.async_connect(endpoint, [&](beast::error_code ec) {
    if (ec) {
      result = ec;
      return;
    }
    http::async_write(stream, req, [&](beast::error_code ec, std::size_t) {
      if (ec) {
        result = ec;
        return;
      }
      http::async_read(stream, buffer, res, [&](beast::error_code ec, std::size_t) { result = ec; });
    });
  });
  ioc.run();
  if (result) return std::unexpected("GET " + target + ": " + result.message());
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  return http_response{static_cast<int>(res.result_int()), std::string(res[http::field::content_type]),
                       std::move(res.body())};
}

// The fields of GET /health the tests rely on.
struct health_status {
  std::string status, model;
  std::int64_t running = -1, waiting = -1;                 // sequences in the scheduler's queues
  std::int64_t kv_blocks_total = -1, kv_blocks_free = -1;  // KV pool, in blocks
  bool idle() const { return running == 0 && waiting == 0 && kv_blocks_free == kv_blocks_total; }
};

// Parses a /health body; an error names the first missing or mistyped field.
inline std::expected<health_status, std::string> parse_health(const std::string& body) {
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  if (parser.parse(body).get(obj) != simdjson::SUCCESS) return std::unexpected("/health is not a JSON object: " + body);
  health_status h;
  auto text = [&](const char* key, std::string& out) {
    std::string_view v;
    if (obj[key].get(v) != simdjson::SUCCESS) return false;
    out = v;
    return true;
  };
  auto count = [&](const char* key, std::int64_t& out) { return obj[key].get(out) == simdjson::SUCCESS; };
  if (!text("status", h.status)) return std::unexpected("/health lacks string 'status': " + body);
  if (!text("model", h.model)) return std::unexpected("/health lacks string 'model': " + body);
  for (auto [key, out] : {std::pair{"running", &h.running},
                          {"waiting", &h.waiting},
                          {"kv_blocks_total", &h.kv_blocks_total},
                          {"kv_blocks_free", &h.kv_blocks_free}})
    if (!count(key, *out)) return std::unexpected(std::string("/health lacks integer '") + key + "': " + body);
  return h;
}

inline std::expected<health_status, std::string> get_health(unsigned short port) {
  auto res = http_get(port, "/health");
  if (!res) return std::unexpected(res.error());
  if (res->status != 200) return std::unexpected("/health answered " + std::to_string(res->status));
  return parse_health(res->body);
}

// Polls /health until the engine holds nothing (no running or waiting sequence, every KV block
// free) or the timeout passes; returns the last status seen, or the last error.
inline std::expected<health_status, std::string> wait_for_idle(unsigned short port, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + test::scaled(timeout);
  for (;;) {
    auto h = get_health(port);
    if ((h && h->idle()) || std::chrono::steady_clock::now() >= deadline) return h;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace pagedserve::e2e
