// Blocking GET /health (health.hpp), over the product's own blocking HTTP client.
#include "loadgen/health.hpp"

#include <simdjson.h>

#include "src/hub/hub_client.hpp"

namespace pagedserve::loadgen {

std::expected<health_status, std::string> http_get(const target_spec& target, const std::string& path,
                                                   std::chrono::milliseconds timeout) {
  const bool ipv6 = target.address.find(':') != std::string::npos;
  const std::string host = ipv6 ? "[" + target.address + "]" : target.address;
  const std::string url = "http://" + host + ":" + std::to_string(target.port) + path;
  auto res = hub_http_get(url, {{"User-Agent", "pagedserve-loadgen"}},
                          {.connect_timeout = timeout, .read_timeout = timeout});
  if (!res) return std::unexpected("GET " + path + ": " + res.error());
  auto body = res->body->read_all(64 << 20);
  if (!body) return std::unexpected("GET " + path + ": " + body.error());
  health_status h;
  h.http_status = res->final_hop().status;
  h.body = std::move(*body);
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
