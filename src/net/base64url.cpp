#include "net/base64url.hpp"

#include <cstdint>

namespace pagedserve::net {

std::string base64url(std::string_view bytes) {
  constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (const unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(alphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(alphabet[(acc << (6 - bits)) & 63]);
  return out;
}

}  // namespace pagedserve::net
