#pragma once
// One WebSocket connection at /v1/ws: reads JSON text frames, starts a request actor per generate,
// routes cancels by client id, and writes the actors' frames one at a time from a bounded queue.
// All state is touched only on the connection's strand (the stream's executor).
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>

#include "actors/request_actor.hpp"
#include "net/net_common.hpp"
#include "pagedserve/config.hpp"

namespace pagedserve::net {

class ws_session : public client_link, public std::enable_shared_from_this<ws_session> {
 public:
  ws_session(tcp::socket socket, engine& e, const server_config& config);
  // Completes the upgrade the HTTP session read, then starts reading frames.
  void run(http::request<http::string_body> upgrade);

  void send_tokens(const std::string& client_id, token_event event) override;
  void send_final(const std::string& client_id, final_event event) override;

 private:
  void on_accept(beast::error_code ec);
  void do_read();
  void on_read(beast::error_code ec, std::size_t bytes);
  void handle_text(std::string_view text);
  // One queued frame: an encoded one, or a token frame still open to more tokens of its request.
  struct outbound_frame {
    std::string frame;      // encoded; empty while this is an open token frame
    std::string client_id;  // token frames: whose tokens
    token_event tokens;
  };
  void enqueue(outbound_frame item);
  void enqueue_error(const std::optional<std::string>& id, std::string_view code, std::string_view message);
  void do_write();
  void on_write(beast::error_code ec, std::size_t bytes);
  void close_requests();

  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
  engine& engine_;
  const server_config& config_;
  std::deque<outbound_frame> outbound_;  // front is being written when writing_
  bool writing_ = false;
  bool closed_ = false;
  std::unordered_map<std::string, std::shared_ptr<request_actor>> requests_;  // by client id
};

}  // namespace pagedserve::net
