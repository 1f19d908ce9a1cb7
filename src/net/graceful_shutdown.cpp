#include "net/graceful_shutdown.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "actors/logger.hpp"
#include "pagedserve/engine_api.hpp"
#include "net/server.hpp"

namespace pagedserve {
namespace {

constexpr auto poll_interval = std::chrono::milliseconds(20);
// After finish_all, how long the final messages get to reach their clients before we stop anyway.
constexpr auto final_flush_limit = std::chrono::seconds(5);

}  // namespace

graceful_shutdown::graceful_shutdown(boost::asio::io_context& io, server& s, std::chrono::seconds grace,
                                     std::stop_source load_stop)
    : io_(io), server_(s), grace_(grace), load_stop_(std::move(load_stop)),
      strand_(boost::asio::make_strand(io)),
      signals_(strand_, SIGINT, SIGTERM),
      timer_(strand_) {
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (!ec) on_signal(sig);
  });
}

void graceful_shutdown::on_signal(int sig) {
  auto log = actor_logger("net");
  if (draining_) {
    log->warn("signal {} again: exiting now", sig);
    spdlog::shutdown();
    std::_Exit(1);
  }
  draining_ = true;
  began_ = std::chrono::steady_clock::now();
  log->info("signal {}: draining {} connections, in-flight requests have {} s to finish (a second signal exits now)",
            sig, server_.n_connections(), grace_.count());
  server_.begin_drain();
  if (!server_.serving_engine()) {
    log->info("signal {} while the model loads: abandoning the load", sig);
    load_stop_.request_stop();
  }
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (!ec) on_signal(sig);
  });
  poll();
}

void graceful_shutdown::poll() {
  const auto elapsed = std::chrono::steady_clock::now() - began_;
  auto log = actor_logger("net");
  if (server_.n_connections() == 0) {
    log->info("drained: stopping");
    signals_.cancel();
    io_.stop();
    return;
  }
  engine_api* e = server_.serving_engine();
  if (!ended_all_ && elapsed >= grace_ && e) {
    ended_all_ = true;
    log->warn("shutdown grace of {} s is over: ending the requests still running", grace_.count());
    e->end_all({engine_error::shutting_down, "the server is shutting down and ended this request"});
  }
  if (elapsed >= grace_ + final_flush_limit) {
    log->warn("{} connections still open {} s after the grace period: stopping anyway", server_.n_connections(),
              final_flush_limit.count());
    signals_.cancel();
    io_.stop();
    return;
  }
  timer_.expires_after(poll_interval);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) poll();
  });
}

}  // namespace pagedserve
