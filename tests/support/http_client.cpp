// The e2e HTTP GET and /health client (http_client.hpp), compiled once into test_support.
#include "support/http_client.hpp"

#include <simdjson.h>

#include <thread>

#include "src/hub/hub_client.hpp"
#include "support/sanitizer_env.hpp"

namespace pagedserve::e2e {

std::expected<http_response, std::string> http_get(unsigned short port, const std::string& target,
                                                   std::chrono::milliseconds timeout) {
  const auto scaled = test::scaled(timeout);
  auto res = hub_http_get("http://127.0.0.1:" + std::to_string(port) + target, {},
                          {.connect_timeout = scaled, .read_timeout = scaled});
  if (!res) return std::unexpected("GET " + target + ": " + res.error());
  auto body = res->body->read_all(64 << 20);
  if (!body) return std::unexpected("GET " + target + ": " + body.error());
  return http_response{res->final_hop().status, res->final_hop().header("content-type"), std::move(*body)};
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
