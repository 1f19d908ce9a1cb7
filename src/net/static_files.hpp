#pragma once
// The browser chat page's files (the repo's web/ folder): a URL path mapped to one file under a
// root folder and never outside it. Plain synchronous code with no Asio, so tests drive it
// directly; the files are a few kilobytes, read whole on the connection's strand.
//
// What is served: only names made of [A-Za-z0-9._-] segments, with a known extension (the type
// decides the Content-Type; anything else is "not found"), after percent-decoding, with no "." or
// ".." segment, and whose real path (symlinks resolved) is still under the root.
#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace pagedserve::net {

struct static_file {
  std::string body;
  std::string_view content_type;  // with charset for text types
  std::string etag;               // quoted; changes when the file's size or mtime does
};

enum class static_error { not_found, too_large };

class static_files {
 public:
  static constexpr std::uintmax_t max_file_bytes = 4 << 20;

  // root need not exist: every lookup is then not_found (available() says so for the start-up log).
  explicit static_files(const std::filesystem::path& root);

  bool available() const { return !root_.empty(); }
  const std::filesystem::path& root() const { return root_; }

  // The file for a URL path (no query string); "/" and folders are their index.html.
  std::expected<static_file, static_error> lookup(std::string_view url_path) const;

  // The checked relative path a URL path names, or nothing when it is malformed, escapes the root,
  // or has a type we do not serve. No file system access.
  static std::optional<std::string> relative_path(std::string_view url_path);
  // The Content-Type for a file name's extension; empty when the type is not served.
  static std::string_view content_type_for(std::string_view name);

 private:
  std::filesystem::path root_;  // canonical; empty when the folder does not exist
};

}  // namespace pagedserve::net
