#pragma once
// An io_context with one thread of its own, for actors that must not wait behind network work: the
// scheduler, the KV allocator and the executor turn an executed step into the next one while request
// actors and sockets are busy on the network threads, so no step waits for a thread to be woken.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <thread>

namespace pagedserve {

class actor_thread {
 public:
  actor_thread() : thread_([this] { context_.run(); }) {}
  ~actor_thread() { stop(); }
  actor_thread(const actor_thread&) = delete;
  actor_thread& operator=(const actor_thread&) = delete;

  boost::asio::any_io_executor executor() { return context_.get_executor(); }
  // Ends the thread; handlers still queued are dropped with the context. Idempotent.
  void stop() {
    work_.reset();
    context_.stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  boost::asio::io_context context_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{context_.get_executor()};
  std::thread thread_;
};

}  // namespace pagedserve
