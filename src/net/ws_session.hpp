#pragma once
// One WebSocket connection at /v1/ws: reads JSON text frames, starts a request actor per generate,
// routes cancels by client id, and writes the actors' frames one at a time from a bounded queue.
// All state is touched only on the connection's strand (the stream's executor).
//
// Limits: max_requests_per_socket in flight; a client that reads slower than its requests generate
// has its tokens coalesced, and once its queue passes max_outbound_frames or max_outbound_bytes
// every request of the socket ends with error client_too_slow. Past twice either bound (final and
// error frames) the client is not reading at all and the connection is dropped; so it is when one
// write stays blocked for write_timeout_seconds (its requests end with client_too_slow). Client text
// quoted in error frames is clipped (ws_protocol.cpp). With nothing in flight and no frame
// from the client for idle_timeout_seconds the socket is closed (1001). Draining: a generate gets
// error shutting_down; once the last request in flight has its final frame the socket is closed.
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "net/connection_registry.hpp"
#include "net/net_common.hpp"
#include "net/ws_frame_dispatch.hpp"
#include "pagedserve/config.hpp"
#include "pagedserve/engine_api.hpp"

namespace pagedserve::net {

class ws_session : public drain_listener, public std::enable_shared_from_this<ws_session> {
 public:
  ws_session(tcp::socket socket, engine_api& e, const server_config& config, std::shared_ptr<connection_slot> slot);
  ~ws_session() override;
  // Completes the upgrade the HTTP session read, then starts reading frames.
  void run(http::request<http::string_body> upgrade);

  // The events of the request the client calls client_id (through its link, ws_session.cpp); any thread.
  void send_tokens(const std::string& client_id, token_event event);
  void send_final(const std::string& client_id, final_event event, const std::vector<std::string>& ignored_fields);
  std::uint64_t client_key() const { return slot_->client_key(); }
  void on_drain() override;

 private:
  void on_accept(beast::error_code ec);
  void do_read();
  void on_read(beast::error_code ec, std::size_t bytes);
  void handle_frame(const ws_frame_in& frame);  // decided by ws_dispatch (ws_frame_dispatch.hpp)
  // One queued frame: an encoded one, or a token frame still open to more tokens of its request.
  struct outbound_frame {
    std::string frame;      // encoded; empty while this is an open token frame
    std::string client_id;  // token frames: whose tokens
    token_event tokens;
  };
  void enqueue(outbound_frame item);
  // Token text and reasoning: merged into the request's open token frame when one is queued last.
  void queue_tokens(const std::string& id, token_event e);
  void enqueue_error(const std::optional<std::string>& id, std::string_view code, std::string_view message);
  void do_write();
  void on_write(beast::error_code ec, std::size_t bytes);
  void close_requests();
  // The client does not keep up: drop its queued token frames, end its requests with client_too_slow.
  void end_slow_client();
  static std::size_t frame_bytes(const outbound_frame& f);
  void arm_idle_timer();
  void on_write_timeout();  // a write blocked past the deadline: end every request, drop the connection
  void close_after_writes(std::string_view why);  // close handshake (1001) once the queue is written
  void do_close();

  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
  engine_api& engine_;
  const server_config& config_;
  std::shared_ptr<connection_slot> slot_;
  std::deque<outbound_frame> outbound_;  // front is being written when writing_
  std::size_t outbound_bytes_ = 0;       // of outbound_, encoded or estimated for open token frames
  bool writing_ = false;
  bool closed_ = false;
  bool draining_ = false;
  std::string close_pending_;  // non-empty: close (with this reason) once outbound_ is written
  asio::steady_timer idle_timer_;
  asio::steady_timer write_timer_;  // armed while a write is in flight
  std::uint64_t write_epoch_ = 0;    // a timer firing for an older write is stale
  std::chrono::steady_clock::time_point last_activity_ = std::chrono::steady_clock::now();
  std::unordered_set<std::string> ending_;  // requests ended for being too slow: their tokens are dropped
  std::unordered_map<std::string, std::shared_ptr<generation_handle>> requests_;  // by client id
};

}  // namespace pagedserve::net
