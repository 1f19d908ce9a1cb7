#include "net/access_policy.hpp"

#include <cctype>

namespace pagedserve::net {
namespace {

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Calls f on each trimmed, non-empty item of a comma-separated list until f returns true.
template <class F>
bool any_item(std::string_view list, F&& f) {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view item = trim(list.substr(0, comma));
    if (!item.empty() && f(item)) return true;
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return false;
}

// The host part of "name[:port]" or "[v6][:port]"; empty when the port is not digits.
std::string_view strip_port(std::string_view authority) {
  std::size_t end = authority.size();
  if (authority.starts_with('[')) {
    end = authority.find(']');
    if (end == std::string_view::npos) return {};
    ++end;
  } else if (const std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    end = colon;
  }
  const std::string_view port = authority.substr(end);
  if (!port.empty()) {
    if (port.size() < 2 || port.size() > 6 || port[0] != ':') return {};
    for (const char c : port.substr(1))
      if (c < '0' || c > '9') return {};
  }
  return authority.substr(0, end);
}

// 127.a.b.c with every part a decimal 0..255 (no leading zeros: "0177" is octal to some resolvers).
bool is_loopback_ipv4(std::string_view host) {
  int parts = 0;
  for (;;) {
    const std::size_t dot = host.find('.');
    const std::string_view part = host.substr(0, dot);
    if (part.empty() || part.size() > 3 || (part.size() > 1 && part[0] == '0')) return false;
    int value = 0;
    for (const char c : part) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + (c - '0');
    }
    if (value > 255 || (parts == 0 && value != 127) || ++parts > 4) return false;
    if (dot == std::string_view::npos) return parts == 4;
    host.remove_prefix(dot + 1);
  }
}

std::optional<openai::api_error> forbidden(std::string message, std::string code) {
  return openai::api_error{403, std::move(message), "invalid_request_error", "", std::move(code)};
}

}  // namespace

bool is_loopback_authority(std::string_view authority) {
  const std::string_view host = strip_port(authority);
  return iequal(host, "localhost") || host == "[::1]" || is_loopback_ipv4(host);
}

std::string_view origin_authority(std::string_view origin) {
  for (const std::string_view scheme : {"http://", "https://"})
    if (origin.size() > scheme.size() && iequal(origin.substr(0, scheme.size()), scheme)) {
      const std::string_view authority = origin.substr(scheme.size());
      return authority.find_first_of("/?#@ ") == std::string_view::npos ? authority : std::string_view{};
    }
  return {};
}

bool is_json_media_type(std::string_view content_type) {
  return iequal(trim(content_type.substr(0, content_type.find(';'))), "application/json");
}

bool host_allowed(const server_config& config, std::string_view host) {
  // A browser always sends Host, so a request without one is no rebinding page.
  if (host.empty() || is_loopback_authority(host)) return true;
  const std::string_view name = strip_port(host);
  return any_item(config.allowed_hosts, [&](std::string_view item) {
    return item == "*" || iequal(item, host) || (!name.empty() && iequal(item, name));
  });
}

bool origin_allowed(const server_config& config, std::string_view origin, std::string_view host) {
  const std::string_view authority = origin_authority(origin);
  // The server's own pages (the chat page) send their own origin: same authority as the Host.
  if (!authority.empty() && (is_loopback_authority(authority) || iequal(authority, host))) return true;
  auto listed = [&](std::string_view item) { return item == "*" || iequal(item, origin); };
  // An origin given CORS headers is one whose pages the operator means to call the API.
  return any_item(config.allowed_origins, listed) || any_item(config.cors_allow_origin, listed);
}

std::optional<openai::api_error> refuse_origin(const server_config& config, const request_origin& r) {
  if (!config.api_key.empty()) return std::nullopt;
  if (!host_allowed(config, r.host))
    return forbidden("Host not allowed: a server without an API key answers only loopback hosts or those in "
                     "--allowed-hosts",
                     "host_not_allowed");
  if (r.has_origin && !origin_allowed(config, r.origin, r.host))
    return forbidden("Origin not allowed: a server without an API key accepts only loopback origins, its own, or "
                     "those in --allowed-origins",
                     "origin_not_allowed");
  return std::nullopt;
}

std::optional<openai::api_error> refuse_content_type(std::string_view content_type) {
  if (is_json_media_type(content_type)) return std::nullopt;
  return openai::api_error{415, "the request body must be JSON, sent with 'Content-Type: application/json'",
                           "invalid_request_error", "", "unsupported_media_type"};
}

bool api_key_required(const server_config& config, std::string_view path) {
  return !config.api_key.empty() && path != "/health";
}

}  // namespace pagedserve::net
