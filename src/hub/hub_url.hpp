#pragma once
// The URL and header parsing the hub client needs: http(s) URLs split for a socket, Location headers
// (absolute, scheme-relative, absolute-path or relative) resolved against the request's URL, path
// segments percent-encoded, ETags normalized as huggingface_hub names blobs, and Content-Range.
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

namespace pagedserve {

struct hub_url {
  std::string scheme;  // "http" or "https"
  std::string host;    // without brackets or port
  std::string port;    // explicit or the scheme's default ("80", "443")
  std::string target;  // path and query, starting with '/'

  // scheme://host[:port], the port only when not the default: what decides whether a redirect
  // leaves the origin (and must not carry the token).
  std::string origin() const;
  std::string str() const { return origin() + target; }
};

std::expected<hub_url, std::string> hub_url_parse(std::string_view url);
// The URL a redirect's Location names, read relative to the URL that answered it.
std::expected<hub_url, std::string> hub_url_resolve(const hub_url& base, std::string_view location);
// True for a Location without scheme and host ("/x" or "x"): huggingface_hub follows these for
// metadata (a renamed repo) and stops at absolute ones (the CDN).
bool hub_location_is_relative(std::string_view location);

// Percent-encodes everything but RFC 3986 unreserved characters, and '/' when keep_slash (a file's
// path inside a repo keeps its folders; a revision such as "refs/pr/1" does not).
std::string hub_url_quote(std::string_view s, bool keep_slash);

// `W/"abc"` and `"abc"` -> `abc`: the name of the blob in the cache.
std::string hub_etag_normalize(std::string_view etag);

struct content_range {
  std::uint64_t first = 0, last = 0;   // inclusive byte positions sent
  std::optional<std::uint64_t> total;  // the whole file's size, when the server knows it
};
// "bytes 100-199/1000" or "bytes 100-199/*"; nullopt when malformed.
std::optional<content_range> content_range_parse(std::string_view value);

// A decimal header value (Content-Length, X-Linked-Size); nullopt when absent or not a number.
std::optional<std::uint64_t> header_u64(std::string_view value);

}  // namespace pagedserve
