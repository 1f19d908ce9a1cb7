#pragma once
// The network edge: a Beast listener on host:port. HTTP requests get /health; an upgrade at
// /v1/ws becomes a WebSocket session speaking the protocol of DESIGN.md. It can listen before the
// model is loaded: until serve() hands it the engine, routes that need the model answer 503
// (GET /health {"status":"loading"}), and afterwards the same socket serves, so a client never
// meets a refused connection.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <expected>
#include <memory>
#include <string>

#include "pagedserve/config.hpp"

namespace pagedserve {

class engine_api;
namespace net {
class connection_registry;
class serving_state;
}

class server {
 public:
  // Nothing to serve until serve() hands it the engine.
  server(boost::asio::io_context& io, const server_config& config);
  ~server();
  // Binds and starts accepting; returns the bound port (useful when config asks for port 0).
  std::expected<unsigned short, std::string> start();
  // The model is loaded: every request from now on reaches e, which must outlive the io_context's run.
  void serve(engine_api& e);
  engine_api* serving_engine() const;  // null until serve()
  // Closes the listening socket: no new connections.
  void stop();
  // Graceful shutdown's first half: stop accepting, and every open connection refuses new requests
  // (503 / error shutting_down), answers the ones in flight, then closes.
  void begin_drain();
  int n_connections() const;
  // server.replica_name, or "<hostname>:<port>" once start() has bound the port.
  const std::string& replica_name() const { return config_.replica_name; }

 private:
  struct listener;
  boost::asio::io_context& io_;
  std::shared_ptr<net::serving_state> state_;  // shared with the sessions, which may outlive us
  server_config config_;
  std::shared_ptr<listener> listener_;
  std::shared_ptr<net::connection_registry> connections_;  // shared with the sessions, which may outlive us
};

}  // namespace pagedserve
