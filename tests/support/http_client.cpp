// The e2e HTTP GET and /health client (http_client.hpp), compiled once into e2e_clients so the test
// files do not each instantiate Beast (under ASan that cost ~50 s of CPU per file).
#include "e2e/http_client.hpp"

#include <simdjson.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <thread>

#include "support/sanitizer_env.hpp"

namespace pagedserve::e2e {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::expected<http_response, std::string> http_get(unsigned short port, const std::string& target,
                                                   std::chrono::milliseconds timeout) {
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

std::expected<health_status, std::string> parse_health(const std::string& body) {
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

std::expected<health_status, std::string> get_health(unsigned short port) {
  auto res = http_get(port, "/health");
  if (!res) return std::unexpected(res.error());
  if (res->status != 200) return std::unexpected("/health answered " + std::to_string(res->status));
  return parse_health(res->body);
}

std::expected<health_status, std::string> wait_for_idle(unsigned short port, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + test::scaled(timeout);
  for (;;) {
    auto h = get_health(port);
    if ((h && h->idle()) || std::chrono::steady_clock::now() >= deadline) return h;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace pagedserve::e2e
