// Blocking GET /health (health.hpp).
#include "loadgen/health.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <simdjson.h>

namespace pagedserve::loadgen {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

std::expected<health_status, std::string> health_get(const target_spec& target, std::chrono::milliseconds timeout) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  http::request<http::empty_body> req(http::verb::get, "/health", 11);
  req.set(http::field::host, target.host + ":" + std::to_string(target.port));
  req.set(http::field::user_agent, "pagedserve-loadgen");
  req.keep_alive(false);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  beast::error_code result = asio::error::timed_out;
  const asio::ip::tcp::endpoint ep(asio::ip::make_address(target.address), target.port);
  stream.expires_after(timeout);  // covers the whole exchange: each step below starts the next
  stream.async_connect(ep, [&](beast::error_code ec) {
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
  io.run();
  if (result) return std::unexpected("GET /health: " + result.message());
  health_status h;
  h.http_status = static_cast<int>(res.result_int());
  h.body = res.body();
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  if (!parser.parse(h.body).get(obj)) {
    for (auto [key, value] : obj) {
      double d = 0;
      if (value.is_number() && !value.get(d)) h.numbers[std::string(key)] = d;
    }
  }
  return h;
}

}  // namespace pagedserve::loadgen
