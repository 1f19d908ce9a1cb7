#pragma once
// The server's view of its open connections, shared by the listener, every session and the shutdown
// path: it caps how many may be open (max_connections, and max_per_client from one remote address)
// and tells each one when the server starts draining. Thread-safe (sessions live on many strands);
// each session handles on_drain on its own.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
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
  connection_registry(int max_connections, int max_per_client)
      : max_(max_connections), max_per_client_(max_per_client) {}

  enum class open_result { opened, server_full, client_full };
  // Counts one more open connection from `client` (its remote address), or refuses at a limit.
  open_result try_open(const std::string& client) {
    std::lock_guard lock(mu_);
    if (open_.load() >= max_) return open_result::server_full;
    int& mine = open_of_[client];
    if (mine >= max_per_client_) return open_result::client_full;
    ++mine;
    open_.fetch_add(1);
    return open_result::opened;
  }
  void close(const std::string& client) {
    std::lock_guard lock(mu_);
    if (auto it = open_of_.find(client); it != open_of_.end() && --it->second <= 0) open_of_.erase(it);
    open_.fetch_sub(1);
  }
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
  const int max_, max_per_client_;
  std::atomic<int> open_{0};
  mutable std::mutex mu_;
  std::unordered_map<std::string, int> open_of_;  // remote address -> its open connections
  bool draining_ = false;
  std::unordered_map<const drain_listener*, std::weak_ptr<drain_listener>> watched_;
};

// One counted connection: released when the last session holding it (HTTP, then WebSocket) ends.
class connection_slot {
 public:
  connection_slot(std::shared_ptr<connection_registry> r, std::string client)
      : registry_(std::move(r)), client_(std::move(client)), client_key_(std::hash<std::string>{}(client_)) {}
  ~connection_slot() { registry_->close(client_); }
  connection_slot(const connection_slot&) = delete;
  connection_slot& operator=(const connection_slot&) = delete;
  connection_registry& registry() const { return *registry_; }
  // The remote address, as a key: the scheduler's fair admission and per-client quotas count by it.
  std::uint64_t client_key() const { return client_key_; }

 private:
  std::shared_ptr<connection_registry> registry_;
  std::string client_;
  std::uint64_t client_key_;
};

}  // namespace pagedserve::net
