#include "pagedserve/server.hpp"

#include <boost/asio/strand.hpp>

#include "actors/engine.hpp"
#include "actors/logger.hpp"
#include "net/http_session.hpp"

namespace pagedserve {

// Accepts connections, each on its own strand, and hands them to an http_session.
struct server::listener : std::enable_shared_from_this<listener> {
  listener(boost::asio::io_context& io, engine& e, const server_config& config)
      : io(io), acceptor(boost::asio::make_strand(io)), engine_(e), config(config) {}

  void do_accept() {
    acceptor.async_accept(boost::asio::make_strand(io), [self = shared_from_this()](net::beast::error_code ec,
                                                                                    net::tcp::socket socket) {
      if (ec == boost::asio::error::operation_aborted) return;
      if (!ec) std::make_shared<net::http_session>(std::move(socket), self->engine_, self->config)->run();
      else actor_logger("net")->warn("accept failed: {}", ec.message());
      self->do_accept();
    });
  }

  boost::asio::io_context& io;
  net::tcp::acceptor acceptor;
  engine& engine_;
  const server_config& config;
};

server::server(boost::asio::io_context& io, engine& e, const server_config& config)
    : io_(io), engine_(e), config_(config) {}

server::~server() { stop(); }

std::expected<unsigned short, std::string> server::start() {
  net::beast::error_code ec;
  const auto address = boost::asio::ip::make_address(config_.host, ec);
  if (ec) return std::unexpected("bad host '" + config_.host + "': " + ec.message());
  listener_ = std::make_shared<listener>(io_, engine_, config_);
  const net::tcp::endpoint endpoint(address, static_cast<unsigned short>(config_.port));
  auto& a = listener_->acceptor;
  if (a.open(endpoint.protocol(), ec); ec) return std::unexpected("open: " + ec.message());
  if (a.set_option(boost::asio::socket_base::reuse_address(true), ec); ec) return std::unexpected("reuse_address: " + ec.message());
  if (a.bind(endpoint, ec); ec)
    return std::unexpected("cannot bind " + config_.host + ":" + std::to_string(config_.port) + ": " + ec.message());
  if (a.listen(boost::asio::socket_base::max_listen_connections, ec); ec) return std::unexpected("listen: " + ec.message());
  const unsigned short port = a.local_endpoint().port();
  listener_->do_accept();
  return port;
}

void server::stop() {
  if (!listener_) return;
  boost::asio::post(listener_->acceptor.get_executor(), [l = listener_] {
    net::beast::error_code ec;
    l->acceptor.close(ec);
  });
  listener_.reset();
}

}  // namespace pagedserve
