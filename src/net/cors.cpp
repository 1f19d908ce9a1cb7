#include "net/cors.hpp"

namespace pagedserve::net {

std::string cors_origin_for(std::string_view allowed, std::string_view origin) {
  if (allowed.empty()) return {};
  if (allowed == "*") return "*";
  while (!allowed.empty()) {
    const std::size_t comma = allowed.find(',');
    std::string_view item = allowed.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!origin.empty() && item == origin) return std::string(origin);
    allowed = comma == std::string_view::npos ? std::string_view{} : allowed.substr(comma + 1);
  }
  return {};
}

header_list cors_preflight_headers(std::string_view cors_origin, std::string_view asked_headers) {
  header_list extra{{"Allow", "GET, HEAD, POST, OPTIONS"}};
  if (!cors_origin.empty()) {
    extra.emplace_back("Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS");
    extra.emplace_back("Access-Control-Allow-Headers",
                       asked_headers.empty() ? "Authorization, Content-Type" : std::string(asked_headers));
    extra.emplace_back("Access-Control-Max-Age", "600");
  }
  return extra;
}

}  // namespace pagedserve::net
