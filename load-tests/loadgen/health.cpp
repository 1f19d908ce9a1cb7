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

std::expected<health_status, std::string> http_get(const target_spec& target, const std::string& path,
                                                   std::chrono::milliseconds timeout) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  http::request<http::empty_body> req(http::verb::get, path, 11);
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
  if (result) return std::unexpected("GET " + path + ": " + result.message());
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

std::optional<std::string> openai_first_model(const target_spec& target) {
  auto res = http_get(target, "/v1/models", std::chrono::seconds(5));
  if (!res || res->http_status != 200) return std::nullopt;
  simdjson::dom::parser parser;
  simdjson::dom::array data;
  std::string_view id;
  if (parser.parse(res->body)["data"].get(data) || data.size() == 0 || data.at(0)["id"].get(id)) return std::nullopt;
  return std::string(id);
}

}  // namespace pagedserve::loadgen
