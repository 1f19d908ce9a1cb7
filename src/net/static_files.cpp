#include "net/static_files.hpp"

#include <array>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <system_error>

namespace pagedserve::net {
namespace {

struct type_entry {
  std::string_view extension;
  std::string_view content_type;
};
constexpr std::array<type_entry, 10> served_types{{
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".json", "application/json"},
    {".txt", "text/plain; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".woff2", "font/woff2"},
}};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

bool segment_ok(std::string_view segment) {
  if (segment.empty() || segment.front() == '.') return false;  // ".", "..", hidden files
  for (const char c : segment) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string etag_of(std::uintmax_t size, std::filesystem::file_time_type mtime) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count();
  char buf[64];
  std::snprintf(buf, sizeof buf, "\"%jx-%llx\"", size, static_cast<unsigned long long>(ns));
  return buf;
}

}  // namespace

static_files::static_files(const std::filesystem::path& root) {
  std::error_code ec;
  auto canonical = std::filesystem::canonical(root, ec);
  if (!ec && std::filesystem::is_directory(canonical, ec)) root_ = std::move(canonical);
}

std::string_view static_files::content_type_for(std::string_view name) {
  for (const type_entry& t : served_types)
    if (name.size() > t.extension.size() && name.ends_with(t.extension)) return t.content_type;
  return {};
}

std::optional<std::string> static_files::relative_path(std::string_view url_path) {
  if (!url_path.starts_with('/')) return std::nullopt;
  auto decoded = percent_decode(url_path);
  if (!decoded || decoded->find("//") != std::string::npos) return std::nullopt;
  std::string rel;
  std::string_view rest = *decoded;
  while (!rest.empty()) {
    const std::size_t slash = rest.find('/');
    const std::string_view segment = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    if (segment.empty()) continue;  // before the leading slash, after a trailing one
    if (!segment_ok(segment)) return std::nullopt;
    if (!rel.empty()) rel.push_back('/');
    rel += segment;
  }
  if (rel.empty() || decoded->ends_with('/')) rel += rel.empty() ? "index.html" : "/index.html";
  if (content_type_for(rel).empty()) return std::nullopt;
  return rel;
}

std::expected<static_file, static_error> static_files::lookup(std::string_view url_path) const {
  if (root_.empty()) return std::unexpected(static_error::not_found);
  const auto rel = relative_path(url_path);
  if (!rel) return std::unexpected(static_error::not_found);
  // A symlink inside the root may point outside it: the real path must still be under the root.
  std::error_code ec;
  const auto real = std::filesystem::canonical(root_ / *rel, ec);
  if (ec) return std::unexpected(static_error::not_found);
  const auto [root_end, real_it] = std::mismatch(root_.begin(), root_.end(), real.begin(), real.end());
  if (root_end != root_.end() || !std::filesystem::is_regular_file(real, ec))
    return std::unexpected(static_error::not_found);
  const std::uintmax_t size = std::filesystem::file_size(real, ec);
  if (ec) return std::unexpected(static_error::not_found);
  if (size > max_file_bytes) return std::unexpected(static_error::too_large);
  const auto mtime = std::filesystem::last_write_time(real, ec);
  if (ec) return std::unexpected(static_error::not_found);
  std::ifstream in(real, std::ios::binary);
  std::string body(size, '\0');
  if (!in.read(body.data(), static_cast<std::streamsize>(size))) return std::unexpected(static_error::not_found);
  return static_file{std::move(body), content_type_for(*rel), etag_of(size, mtime)};
}

}  // namespace pagedserve::net
