#pragma once
// SIGTERM/SIGINT handling for `serve`. The first signal drains: the listener closes, every connection
// refuses new requests and closes once its own are answered. When the last connection is gone the
// io_context stops (and `serve` returns 0). Requests still running after shutdown_grace_seconds are
// ended by the scheduler (finish_all, error shutting_down) so each gets its final message; a second
// signal exits at once.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>

namespace pagedserve {

class engine;
class server;

class graceful_shutdown {
 public:
  graceful_shutdown(boost::asio::io_context& io, server& s, engine& e, std::chrono::seconds grace);

 private:
  void on_signal(int sig);
  void poll();

  boost::asio::io_context& io_;
  server& server_;
  engine& engine_;
  std::chrono::seconds grace_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;  // io_threads > 1: one handler at a time
  boost::asio::signal_set signals_;
  boost::asio::steady_timer timer_;
  bool draining_ = false;
  bool ended_all_ = false;  // finish_all sent
  std::chrono::steady_clock::time_point began_{};
};

}  // namespace pagedserve
