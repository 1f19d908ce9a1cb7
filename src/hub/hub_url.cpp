#include "hub/hub_url.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace pagedserve {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string default_port(std::string_view scheme) { return scheme == "https" ? "443" : "80"; }

}  // namespace

std::string hub_url::origin() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return scheme + "://" + h + (port == default_port(scheme) ? "" : ":" + port);
}

std::expected<hub_url, std::string> hub_url_parse(std::string_view url) {
  const auto sep = url.find("://");
  if (sep == std::string_view::npos) return std::unexpected("not an http(s) URL: '" + std::string(url) + "'");
  hub_url u;
  u.scheme = lower(url.substr(0, sep));
  if (u.scheme != "http" && u.scheme != "https")
    return std::unexpected("unsupported URL scheme '" + u.scheme + "' in '" + std::string(url) + "' (http or https)");
  std::string_view rest = url.substr(sep + 3);
  const auto path_at = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, path_at);
  std::string_view target = path_at == std::string_view::npos ? std::string_view("/") : rest.substr(path_at);
  if (const auto hash = target.find('#'); hash != std::string_view::npos) target = target.substr(0, hash);
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) authority = authority.substr(at + 1);
  if (authority.starts_with('[')) {  // IPv6 literal
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return std::unexpected("bad host in '" + std::string(url) + "'");
    u.host = std::string(authority.substr(1, close - 1));
    authority = authority.substr(close + 1);
    if (authority.starts_with(':')) u.port = std::string(authority.substr(1));
  } else {
    const auto colon = authority.find(':');
    u.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) u.port = std::string(authority.substr(colon + 1));
  }
  if (u.host.empty()) return std::unexpected("no host in '" + std::string(url) + "'");
  if (u.port.empty()) u.port = default_port(u.scheme);
  unsigned port = 0;
  const auto [p, ec] = std::from_chars(u.port.data(), u.port.data() + u.port.size(), port);
  if (ec != std::errc{} || p != u.port.data() + u.port.size() || port == 0 || port > 65535)
    return std::unexpected("bad port in '" + std::string(url) + "'");
  u.host = lower(u.host);
  u.target = target.starts_with('?') ? "/" + std::string(target) : std::string(target);
  return u;
}

bool hub_location_is_relative(std::string_view location) {
  return location.find("://") == std::string_view::npos && !location.starts_with("//");
}

std::expected<hub_url, std::string> hub_url_resolve(const hub_url& base, std::string_view location) {
  if (location.empty()) return std::unexpected("redirect without a Location");
  if (location.starts_with("//")) return hub_url_parse(base.scheme + ":" + std::string(location));
  if (!hub_location_is_relative(location)) return hub_url_parse(location);
  hub_url u = base;
  if (location.starts_with('/')) {
    u.target = std::string(location);
  } else {  // relative to the base's folder
    std::string_view path = std::string_view(base.target).substr(0, base.target.find('?'));
    u.target = std::string(path.substr(0, path.rfind('/') + 1)) + std::string(location);
  }
  if (const auto hash = u.target.find('#'); hash != std::string::npos) u.target.resize(hash);
  return u;
}

std::string hub_url_quote(std::string_view s, bool keep_slash) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string hub_etag_normalize(std::string_view etag) {
  if (etag.starts_with("W/")) etag.remove_prefix(2);
  while (etag.starts_with('"')) etag.remove_prefix(1);
  while (etag.ends_with('"')) etag.remove_suffix(1);
  return std::string(etag);
}

std::optional<std::uint64_t> header_u64(std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc{} || p != value.data() + value.size()) return std::nullopt;
  return v;
}

std::optional<content_range> content_range_parse(std::string_view value) {
  if (!value.starts_with("bytes ")) return std::nullopt;
  value.remove_prefix(6);
  const auto dash = value.find('-'), slash = value.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || dash > slash) return std::nullopt;
  const auto first = header_u64(value.substr(0, dash)), last = header_u64(value.substr(dash + 1, slash - dash - 1));
  if (!first || !last || *last < *first) return std::nullopt;
  content_range r{*first, *last, std::nullopt};
  const std::string_view total = value.substr(slash + 1);
  if (total != "*") {
    r.total = header_u64(total);
    if (!r.total || *r.total <= *last) return std::nullopt;
  }
  return r;
}

}  // namespace pagedserve
