#pragma once
// One HTTP/1.1 connection: keep-alive request loop; GET /health answers with the engine's figures;
// an upgrade at /v1/ws hands the socket to a ws_session. Everything else is a JSON 404.
#include <memory>
#include <optional>

#include "actors/engine.hpp"
#include "net/net_common.hpp"

namespace pagedserve::net {

class http_session : public std::enable_shared_from_this<http_session> {
 public:
  http_session(tcp::socket socket, engine& e, const server_config& config);
  void run();

 private:
  void do_read();
  void on_read(beast::error_code ec, std::size_t bytes);
  void handle_request();
  void send_json(http::status status, std::string body);
  void on_write(bool keep_alive, beast::error_code ec, std::size_t bytes);

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  engine& engine_;
  const server_config& config_;
};

}  // namespace pagedserve::net
