#pragma once
// The server's view of its open connections, shared by the listener, every session and the shutdown
// path: it caps how many may be open (max_connections) and tells each one when the server starts
// draining. Thread-safe (sessions live on many strands); each session handles on_drain on its own.
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace pagedserve::net {

// A connection that must react to a drain: refuse new requests, close once its own are answered.
class drain_listener {
 public:
  virtual ~drain_listener() = default;
  virtual void on_drain() = 0;  // called from any thread: post onto your strand
};

class connection_registry {
 public:
  explicit connection_registry(int max_connections) : max_(max_connections) {}

  // Counts one more open connection, or refuses (false) at the limit.
  bool try_open() {
    int n = open_.load();
    do {
      if (n >= max_) return false;
    } while (!open_.compare_exchange_weak(n, n + 1));
    return true;
  }
  void close() { open_.fetch_sub(1); }
  int n_open() const { return open_.load(); }

  // A session to tell about the drain (at once if it has begun); forget it before it dies.
  void watch(const std::shared_ptr<drain_listener>& s) {
    {
      std::lock_guard lock(mu_);
      if (!draining_) {
        watched_[s.get()] = s;
        return;
      }
    }
    s->on_drain();
  }
  void unwatch(const drain_listener* s) {
    std::lock_guard lock(mu_);
    watched_.erase(s);
  }

  // From now on every session refuses new requests and closes once idle.
  void begin_drain() {
    std::unordered_map<const drain_listener*, std::weak_ptr<drain_listener>> to_tell;
    {
      std::lock_guard lock(mu_);
      draining_ = true;
      to_tell.swap(watched_);
    }
    for (auto& [p, weak] : to_tell)
      if (auto s = weak.lock()) s->on_drain();
  }
  bool draining() const {
    std::lock_guard lock(mu_);
    return draining_;
  }

 private:
  const int max_;
  std::atomic<int> open_{0};
  mutable std::mutex mu_;
  bool draining_ = false;
  std::unordered_map<const drain_listener*, std::weak_ptr<drain_listener>> watched_;
};

// One counted connection: released when the last session holding it (HTTP, then WebSocket) ends.
class connection_slot {
 public:
  explicit connection_slot(std::shared_ptr<connection_registry> r) : registry_(std::move(r)) {}
  ~connection_slot() { registry_->close(); }
  connection_slot(const connection_slot&) = delete;
  connection_slot& operator=(const connection_slot&) = delete;
  connection_registry& registry() const { return *registry_; }

 private:
  std::shared_ptr<connection_registry> registry_;
};

}  // namespace pagedserve::net
