#pragma once
// SHA-256 over a stream of bytes (OpenSSL's EVP), for checking downloaded LFS files against the hub's
// lfs.sha256 while they are written, so a large file is read once.
#include <cstddef>
#include <expected>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace pagedserve {

class sha256_hasher {
 public:
  sha256_hasher();
  ~sha256_hasher();
  sha256_hasher(const sha256_hasher&) = delete;
  sha256_hasher& operator=(const sha256_hasher&) = delete;

  void update(const void* data, std::size_t n);
  // The digest as 64 lower-case hex digits; the hasher starts over afterwards.
  std::string hex_digest();

 private:
  struct state;
  std::unique_ptr<state> state_;
};

std::string sha256_hex(std::string_view bytes);
// Hashes the first `n_bytes` of a file into h (a resumed download's prefix); an error names the file.
std::expected<void, std::string> sha256_update_from_file(sha256_hasher& h, const std::filesystem::path& path,
                                                         std::uint64_t n_bytes);

}  // namespace pagedserve
