#pragma once
// Runs requests against the target on a private single-threaded io_context: launches them,
// enforces per-request timeouts, performs soak actions (cancel, disconnect) when due, and runs
// the two sweep shapes, closed loop at a concurrency and open loop at a Poisson rate.
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "loadgen/client.hpp"
#include "loadgen/options.hpp"
#include "loadgen/workload.hpp"

namespace pagedserve::loadgen {

class runner {
 public:
  explicit runner(const options& o);
  ~runner();
  runner(const runner&) = delete;
  runner& operator=(const runner&) = delete;

  // Opens n WebSocket connections (SSE connects per request), waiting at most 30 s.
  // Returns an empty string, or what went wrong.
  std::string open(int n_connections);
  // Sends spec now; rec is filled as it runs and must stay where it is until it ends.
  void launch(request_record& rec, const request_spec& spec);
  // Called once per request as it ends (not for those ended by close()).
  void on_end(std::function<void(request_record&)> hook) { hook_ = std::move(hook); }
  // Runs the io_context for up to `slice`, then times out overdue requests and acts on due ones.
  void poll(std::chrono::milliseconds slice);
  // Ends everything still in flight as failed with this kind; no hook calls.
  void abort_all(const std::string& kind);
  // Closes connections and lets them finish closing (bounded).
  void close();
  std::size_t in_flight() const { return launched_.size(); }
  boost::asio::io_context& io() { return io_; }

 private:
  void ended(request_record& rec);

  const options& o_;
  boost::asio::io_context io_;
  std::unique_ptr<target_client> client_;
  std::function<void(request_record&)> hook_;
  std::unordered_map<request_record*, clock_type::time_point> launched_;  // in flight -> launch time
  bool closing_ = false;
};

// One sweep level's requests and how long they took.
struct level_result {
  int concurrency = 0;  // closed loop; 0 in open loop
  double rate = 0;      // open loop, requests per second; 0 in closed loop
  std::vector<request_record> records;  // one per spec, in spec order
  clock_type::time_point start{}, end{};
  double duration_s = 0;  // first send to last end
  double client_cpu_s = 0;  // CPU loadgen itself used during the level (user + system)
  double loadavg_start = 0, loadavg_end = 0;  // host 1-minute load average: a busy host skews everything
  std::string error;      // the level could not run (connections did not open)
};

// The host's 1-minute load average (/proc/loadavg), 0 when unknown.
double host_loadavg();
// CPU seconds this process has used so far (user + system).
double process_cpu_s();

// A closed-loop level (concurrency > 0) or an open-loop one (rate > 0).
level_result level_run(const options& o, int concurrency, double rate, const std::vector<request_spec>& specs);

// Fills a record's plan fields from its spec.
request_record record_for(const request_spec& spec);

}  // namespace pagedserve::loadgen
