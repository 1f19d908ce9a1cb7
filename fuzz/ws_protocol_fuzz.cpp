// WebSocket client frames (DESIGN.md's wire protocol): any text a client sends must parse into a
// command or a protocol_error, never crash, and an accepted command's id must round-trip through
// the error-frame encoder (which needs valid UTF-8: the parser must only accept such ids).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "api/ws_protocol.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto frame = pagedserve::parse_client_frame(text);
  if (const auto* g = std::get_if<pagedserve::generate_command>(&frame)) {
    (void)pagedserve::encode_error_frame(g->id, "fuzz", "fuzz");
  } else if (const auto* e = std::get_if<pagedserve::protocol_error>(&frame)) {
    (void)pagedserve::encode_error_frame(e->id, e->code, e->message);
  }
  return 0;
}
