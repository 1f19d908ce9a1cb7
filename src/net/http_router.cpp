#include "net/http_router.hpp"

namespace pagedserve::net {
namespace {

constexpr route_spec routes[] = {
    {"/health", http::verb::get, http_route::health},
    {"/version", http::verb::get, http_route::version},
    {"/metrics", http::verb::get, http_route::metrics},
    {"/v1/models", http::verb::get, http_route::models},
    {"/v1/completions", http::verb::post, http_route::completions},
    {"/v1/chat/completions", http::verb::post, http_route::chat_completions},
    {"/tokenize", http::verb::post, http_route::tokenize},
    {"/detokenize", http::verb::post, http_route::detokenize},
    {"/v1/ws", http::verb::get, http_route::websocket},
};

}  // namespace

std::optional<route_spec> find_route(std::string_view path) {
  if (path.starts_with("/v1/models/")) path = "/v1/models";
  for (const route_spec& r : routes)
    if (r.path == path) return r;
  return std::nullopt;
}

bool route_accepts(const route_spec& r, http::verb method) {
  return method == r.method || (r.method == http::verb::get && method == http::verb::head);
}

std::string_view route_allow(const route_spec& r) {
  return r.method == http::verb::get ? "GET, HEAD, OPTIONS" : "POST, OPTIONS";
}

}  // namespace pagedserve::net
