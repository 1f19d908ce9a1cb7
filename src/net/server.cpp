#include "net/server.hpp"

#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

#include <unistd.h>

#include <cstring>

#include "actors/logger.hpp"
#include "net/connection_registry.hpp"
#include "net/http_api.hpp"
#include "net/http_session.hpp"
#include "net/serving_state.hpp"
#include "net/static_files.hpp"
#include "api/openai_response.hpp"

namespace pagedserve {
namespace {

// The refusal of a connection past a limit: one 503 and a close, without reading the request.
std::string refusal_response(std::string_view message, std::string_view code) {
  const std::string body = openai::encode_error({503, std::string(message), "server_error", "", std::string(code)});
  return "HTTP/1.1 503 Service Unavailable\r\nServer: pagedserve/" PAGEDSERVE_VERSION
         "\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n" + body;
}

void refuse_connection(net::tcp::socket socket, bool client_full) {
  static const std::string server_full_response =
      refusal_response("the server has too many open connections; retry later", "too_many_connections");
  static const std::string client_full_response = refusal_response(
      "this client has too many open connections to the server; close some and retry", "too_many_client_connections");
  const std::string& response = client_full ? client_full_response : server_full_response;
  auto s = std::make_shared<net::tcp::socket>(std::move(socket));
  boost::asio::async_write(*s, boost::asio::buffer(response), [s](net::beast::error_code, std::size_t) {
    net::beast::error_code ec;
    s->shutdown(net::tcp::socket::shutdown_both, ec);
    s->close(ec);
  });
}

}  // namespace

namespace {

// "<hostname>:<port>": a replica's name when the config gives none (unique on one machine and, with
// distinct hostnames, across a fleet).
std::string default_replica_name(unsigned short port) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::strcpy(host, "localhost");
  return std::string(host) + ":" + std::to_string(port);
}

}  // namespace

// Accepts connections, each on its own strand, and hands them to an http_session.
struct server::listener : std::enable_shared_from_this<listener> {
  listener(boost::asio::io_context& io, std::shared_ptr<const net::serving_state> state, const server_config& config,
           std::shared_ptr<net::connection_registry> connections)
      : io(io),
        acceptor(boost::asio::make_strand(io)),
        state(std::move(state)),
        config(config),
        connections(std::move(connections)),
        web(std::make_shared<const net::static_files>(config.web_root)),
        api(std::make_shared<const net::http_api>(this->state, config, web)) {}

  void do_accept() {
    acceptor.async_accept(boost::asio::make_strand(io), [self = shared_from_this()](net::beast::error_code ec,
                                                                                    net::tcp::socket socket) {
      if (ec == boost::asio::error::operation_aborted) return;
      if (ec) {
        actor_logger("net")->warn("accept failed: {}", ec.message());
        self->do_accept();
        return;
      }
      net::beast::error_code addr_ec;
      const std::string client = socket.remote_endpoint(addr_ec).address().to_string();
      if (addr_ec) {  // gone already
        self->do_accept();
        return;
      }
      using open_result = net::connection_registry::open_result;
      const open_result opened = self->connections->try_open(client);
      if (opened != open_result::opened) {
        if (opened == open_result::server_full)
          actor_logger("net")->warn("{} connections open: refusing one more", self->config.max_connections);
        else
          actor_logger("net")->warn("{} has {} connections open: refusing one more", client,
                                    self->config.max_connections_per_client);
        refuse_connection(std::move(socket), opened == open_result::client_full);
      } else {
        auto slot = std::make_shared<net::connection_slot>(self->connections, client);
        std::make_shared<net::http_session>(std::move(socket), self->api, self->config, std::move(slot))->run();
      }
      self->do_accept();
    });
  }

  boost::asio::io_context& io;
  net::tcp::acceptor acceptor;
  std::shared_ptr<const net::serving_state> state;
  const server_config& config;
  std::shared_ptr<net::connection_registry> connections;
  std::shared_ptr<const net::static_files> web;  // the chat page at /
  std::shared_ptr<const net::http_api> api;      // routes every session's requests
};

server::server(boost::asio::io_context& io, const server_config& config)
    : io_(io),
      state_(std::make_shared<net::serving_state>()),
      config_(config),
      connections_(std::make_shared<net::connection_registry>(config.max_connections, config.max_connections_per_client)) {}


server::~server() { stop(); }

std::expected<unsigned short, std::string> server::start() {
  net::beast::error_code ec;
  const auto address = boost::asio::ip::make_address(config_.host, ec);
  if (ec) return std::unexpected("bad host '" + config_.host + "': " + ec.message());
  listener_ = std::make_shared<listener>(io_, state_, config_, connections_);
  const net::tcp::endpoint endpoint(address, static_cast<unsigned short>(config_.port));
  auto& a = listener_->acceptor;
  if (a.open(endpoint.protocol(), ec); ec) return std::unexpected("open: " + ec.message());
  if (a.set_option(boost::asio::socket_base::reuse_address(true), ec); ec) return std::unexpected("reuse_address: " + ec.message());
  if (a.bind(endpoint, ec); ec)
    return std::unexpected("cannot bind " + config_.host + ":" + std::to_string(config_.port) + ": " + ec.message());
  if (a.listen(boost::asio::socket_base::max_listen_connections, ec); ec) return std::unexpected("listen: " + ec.message());
  const unsigned short port = a.local_endpoint().port();
  // Before the first accept: every session reads the name through listener_->config, i.e. config_.
  if (config_.replica_name.empty()) config_.replica_name = default_replica_name(port);
  listener_->do_accept();
  if (listener_->web->available())
    actor_logger("net")->info("chat page at / from {}", listener_->web->root().string());
  else if (config_.web_root.empty())
    actor_logger("net")->warn("no chat page folder: GET / answers 404 (set server.web_root or --web-root)");
  else
    actor_logger("net")->warn("chat page folder '{}' not found: GET / answers 404 (set server.web_root or --web-root)",
                              config_.web_root);
  return port;
}

void server::serve(engine_api& e) { state_->set_ready(e); }

engine_api* server::serving_engine() const { return state_->engine_if_ready(); }

void server::stop() {
  if (!listener_) return;
  boost::asio::post(listener_->acceptor.get_executor(), [l = listener_] {
    net::beast::error_code ec;
    l->acceptor.close(ec);
  });
  listener_.reset();
}

void server::begin_drain() {
  stop();
  connections_->begin_drain();
}

int server::n_connections() const { return connections_->n_open(); }

}  // namespace pagedserve
