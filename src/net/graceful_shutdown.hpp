#pragma once
// SIGTERM/SIGINT handling for `serve`. The first signal drains: the listener closes, every connection
// refuses new requests and closes once its own are answered. When the last connection is gone the
// io_context stops (and `serve` returns 0). Requests still running after shutdown_grace_seconds are
// ended by the scheduler (finish_all, error shutting_down) so each gets its final message; a second
// signal exits at once. A signal while the model is still loading also requests load_stop: the load
// is abandoned at its next check and `serve` returns 0 once the connections are drained.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>
#include <stop_token>

namespace pagedserve {

class server;

class graceful_shutdown {
 public:
  // The engine is the server's (server::serving_engine), once it has one.
  graceful_shutdown(boost::asio::io_context& io, server& s, std::chrono::seconds grace, std::stop_source load_stop = {});

 private:
  void on_signal(int sig);
  void poll();

  boost::asio::io_context& io_;
  server& server_;
  std::chrono::seconds grace_;
  std::stop_source load_stop_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;  // io_threads > 1: one handler at a time
  boost::asio::signal_set signals_;
  boost::asio::steady_timer timer_;
  bool draining_ = false;
  bool ended_all_ = false;  // finish_all sent
  std::chrono::steady_clock::time_point began_{};
};

}  // namespace pagedserve
