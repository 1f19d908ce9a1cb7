#include "net/ws_frame_dispatch.hpp"

namespace pagedserve::net {

ws_action ws_dispatch(const ws_frame_in& frame, const ws_session_view& session, const server_config& config,
                      const sampling_params& defaults) {
  if (!frame.text) return protocol_error{std::nullopt, "binary_frame", "binary frames are not accepted; send JSON text"};
  if (frame.size > config.max_frame_bytes)
    return protocol_error{std::nullopt, "frame_too_large",
                          "frame of " + std::to_string(frame.size) + " bytes exceeds the limit of " +
                              std::to_string(config.max_frame_bytes)};
  client_frame parsed = parse_client_frame(frame.payload, defaults, config.max_logprobs);
  if (auto* err = std::get_if<protocol_error>(&parsed)) return std::move(*err);
  if (auto* cancel = std::get_if<cancel_command>(&parsed)) {
    if (!session.in_flight(cancel->id))
      return protocol_error{cancel->id, "unknown_id", "no request with this id is in flight"};
    return ws_cancel{std::move(cancel->id)};
  }
  auto& gen = std::get<generate_command>(parsed);
  if (session.draining)
    return protocol_error{gen.id, "shutting_down", "the server is shutting down; retry on another connection later"};
  if (session.in_flight(gen.id))
    return protocol_error{gen.id, "duplicate_id", "a request with this id is already in flight"};
  if (session.n_in_flight >= static_cast<std::size_t>(config.max_requests_per_socket))
    return protocol_error{gen.id, "too_many_requests",
                          "at most " + std::to_string(config.max_requests_per_socket) +
                              " requests may be in flight on one socket"};
  return ws_start{std::move(gen)};
}

}  // namespace pagedserve::net
