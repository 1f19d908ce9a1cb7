#pragma once
// The route table of the HTTP API: which paths exist and the method each takes (HEAD goes with GET).
// Pure lookups, so the table is the one place a route is added.
#include <optional>
#include <string_view>

#include "net/net_common.hpp"

namespace pagedserve::net {

enum class http_route {
  health, version, metrics, models, completions, chat_completions, tokenize, detokenize, websocket
};

struct route_spec {
  std::string_view path;  // /v1/models also matches /v1/models/<id>
  http::verb method;
  http_route route;
};

// The route of path; nullopt when none (static files and 404s are the caller's).
std::optional<route_spec> find_route(std::string_view path);
// Does the route take method (HEAD for a GET route)?
bool route_accepts(const route_spec& r, http::verb method);
// The Allow header of a route's 405.
std::string_view route_allow(const route_spec& r);

}  // namespace pagedserve::net
