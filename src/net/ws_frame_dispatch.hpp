#pragma once
// What a WebSocket session does with one client frame, decided without a socket: start a request,
// cancel one, or answer an error frame. ws_session applies the decision; fuzz/ws_session_fuzz.cpp
// drives sequences of frames through it against a model of the session's requests.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "pagedserve/config.hpp"
#include "api/ws_protocol.hpp"

namespace pagedserve::net {

// One frame as read: text or binary, its size as received (a frame over max_frame_bytes is not parsed).
struct ws_frame_in {
  bool text = true;
  std::size_t size = 0;
  std::string_view payload;
};

// The session's state the decision depends on.
struct ws_session_view {
  std::function<bool(const std::string&)> in_flight;  // is a request with this client id running
  std::size_t n_in_flight = 0;
  bool draining = false;
};

struct ws_start {
  generate_command command;
};
struct ws_cancel {
  std::string id;
};
using ws_action = std::variant<ws_start, ws_cancel, protocol_error>;

ws_action ws_dispatch(const ws_frame_in& frame, const ws_session_view& session, const server_config& config,
                      const sampling_params& defaults);

}  // namespace pagedserve::net
