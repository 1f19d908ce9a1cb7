#include "hub/sha256.hpp"

#include <openssl/evp.h>

#include <cstdio>
#include <fstream>
#include <vector>

namespace pagedserve {

struct sha256_hasher::state {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~state() { EVP_MD_CTX_free(ctx); }
};

sha256_hasher::sha256_hasher() : state_(std::make_unique<state>()) {
  EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr);
}

sha256_hasher::~sha256_hasher() = default;

void sha256_hasher::update(const void* data, std::size_t n) { EVP_DigestUpdate(state_->ctx, data, n); }

std::string sha256_hasher::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(state_->ctx, md, &len);
  EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr);
  std::string hex(2 * len, '0');
  static constexpr char digits[] = "0123456789abcdef";
  for (unsigned i = 0; i < len; ++i) {
    hex[2 * i] = digits[md[i] >> 4];
    hex[2 * i + 1] = digits[md[i] & 15];
  }
  return hex;
}

std::string sha256_hex(std::string_view bytes) {
  sha256_hasher h;
  h.update(bytes.data(), bytes.size());
  return h.hex_digest();
}

std::expected<void, std::string> sha256_update_from_file(sha256_hasher& h, const std::filesystem::path& path,
                                                         std::uint64_t n_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected("cannot read " + path.string());
  std::vector<char> buf(1 << 20);
  while (n_bytes > 0) {
    const auto want = static_cast<std::streamsize>(std::min<std::uint64_t>(n_bytes, buf.size()));
    in.read(buf.data(), want);
    if (in.gcount() != want) return std::unexpected(path.string() + ": shorter than expected");
    h.update(buf.data(), static_cast<std::size_t>(want));
    n_bytes -= static_cast<std::uint64_t>(want);
  }
  return {};
}

}  // namespace pagedserve
