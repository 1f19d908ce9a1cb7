// Request launching, timeouts and the two sweep shapes (runner.hpp).
#include "loadgen/runner.hpp"

#include <boost/asio/steady_timer.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <optional>
#include <fstream>

namespace pagedserve::loadgen {

using namespace std::chrono_literals;

runner::runner(const options& o) : o_(o) {
  auto on_end = [this](request_record& rec) { ended(rec); };
  client_ = o.target.kind == target_spec::api::websocket ? ws_client_make(io_, o, on_end) : sse_client_make(io_, o, on_end);
}

runner::~runner() { close(); }

std::string runner::open(int n_connections) {
  // Shared, not on this stack: a connection may report after the deadline below.
  auto result = std::make_shared<std::optional<std::string>>();
  client_->open(n_connections, [result](std::string e) { *result = std::move(e); });
  const auto deadline = clock_type::now() + 30s;
  while (!*result && clock_type::now() < deadline) {
    io_.restart();
    io_.run_for(20ms);
  }
  if (!*result) return "connections did not open within 30 s";
  return **result;
}

void runner::launch(request_record& rec, const request_spec& spec) {
  if (closing_) return;  // an arrival that fired while the level was being torn down: stays "not_sent"
  launched_[&rec] = clock_type::now();
  client_->start(rec, spec);
}

void runner::ended(request_record& rec) {
  launched_.erase(&rec);
  if (!closing_ && hook_) hook_(rec);
}

void runner::poll(std::chrono::milliseconds slice) {
  io_.restart();
  io_.run_for(slice);
  const auto now = clock_type::now();
  const auto timeout = std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o_.timeout_s));
  std::vector<request_record*> overdue, due;
  for (const auto& [rec, at] : launched_) {
    if (now - (rec->sent_yet() ? rec->sent : at) > timeout) overdue.push_back(rec);
    else if (rec->action != request_action::none && !rec->action_done && rec->sent_yet() &&
             now - rec->sent >= std::chrono::duration<double>(rec->action_after_s))
      due.push_back(rec);
  }
  for (request_record* rec : overdue) {
    client_->abandon(*rec);
    record_end(*rec, request_outcome::failed, [this](request_record& r) { ended(r); }, "timeout",
               "no end within --timeout-s");
  }
  for (request_record* rec : due) {
    if (rec->outcome != request_outcome::pending) continue;  // a disconnect above took it with its socket
    rec->action_done = true;
    if (rec->action == request_action::cancel) client_->cancel(*rec);
    else client_->disconnect(*rec);
  }
}

void runner::abort_all(const std::string& kind) {
  const bool was_closing = std::exchange(closing_, true);
  std::vector<request_record*> left;
  for (const auto& [rec, at] : launched_) left.push_back(rec);
  for (request_record* rec : left) {
    client_->abandon(*rec);
    record_end(*rec, request_outcome::failed, [this](request_record& r) { ended(r); }, kind, "still running at the level deadline");
  }
  closing_ = was_closing;
}

void runner::close() {
  if (!client_) return;
  closing_ = true;
  client_->close();
  io_.restart();
  io_.run_for(2s);  // close handshakes; a server that does not answer is left behind
  client_.reset();
}

double host_loadavg() {
  std::ifstream f("/proc/loadavg");
  double v = 0;
  return f >> v ? v : 0;
}

double process_cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  const auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

request_record record_for(const request_spec& spec) {
  request_record r;
  r.index = spec.index;
  r.id = spec.id;
  r.prompt_tokens_planned = spec.prompt_tokens;
  r.max_tokens = spec.max_tokens;
  return r;
}

namespace {

// Drives the level until every request ended or the level deadline passed.
void level_wait(runner& r, level_result& out, const std::size_t& n_ended, const options& o) {
  const auto deadline = out.start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o.level_timeout_s));
  while (n_ended < out.records.size()) {
    r.poll(20ms);
    if (clock_type::now() > deadline) {
      r.abort_all("level_timeout");
      break;
    }
  }
  for (auto& rec : out.records)
    if (rec.outcome == request_outcome::pending) {
      rec.outcome = request_outcome::failed;
      rec.error_kind = "not_sent";
    }
}

}  // namespace

level_result level_run(const options& o, int concurrency, double rate, const std::vector<request_spec>& specs) {
  level_result out;
  out.concurrency = concurrency;
  out.rate = rate;
  for (const auto& s : specs) out.records.push_back(record_for(s));
  const int n = static_cast<int>(specs.size());
  runner r(o);
  int n_connections = o.connections;
  if (n_connections == 0) n_connections = concurrency > 0 ? concurrency : std::min(n, o.max_concurrency > 0 ? o.max_concurrency : 64);
  n_connections = std::max(1, std::min(n_connections, n));
  if (auto error = r.open(n_connections); !error.empty()) {
    out.error = error;
    for (auto& rec : out.records) {
      rec.outcome = request_outcome::failed;
      rec.error_kind = "connect";
      rec.error_message = error;
    }
    return out;
  }
  std::size_t next = 0, n_ended = 0;
  std::deque<std::size_t> queued;  // open loop: arrived but held by --max-concurrency
  const auto cap = static_cast<std::size_t>(concurrency > 0 ? concurrency : o.max_concurrency);
  auto send = [&](std::size_t k) { r.launch(out.records[k], specs[k]); };
  r.on_end([&](request_record&) {
    ++n_ended;
    if (concurrency > 0 && next < specs.size()) send(next++);
    else if (!queued.empty() && r.in_flight() < cap) {
      send(queued.front());
      queued.pop_front();
    }
  });
  out.loadavg_start = host_loadavg();
  const double cpu_start = process_cpu_s();
  out.start = clock_type::now();
  boost::asio::steady_timer arrivals(r.io());
  std::function<void()> schedule;
  if (concurrency > 0) {
    while (next < specs.size() && next < static_cast<std::size_t>(concurrency)) send(next++);
  } else {
    schedule = [&] {
      arrivals.expires_at(out.start + std::chrono::duration_cast<clock_type::duration>(
                                          std::chrono::duration<double>(specs[next].arrival_s)));
      arrivals.async_wait([&](boost::system::error_code ec) {
        if (ec) return;
        const std::size_t k = next++;
        if (cap > 0 && r.in_flight() >= cap) queued.push_back(k);
        else send(k);
        if (next < specs.size()) schedule();
      });
    };
    if (!specs.empty()) schedule();
  }
  level_wait(r, out, n_ended, o);
  out.client_cpu_s = process_cpu_s() - cpu_start;
  out.loadavg_end = host_loadavg();
  arrivals.cancel();
  r.close();
  out.end = out.start;
  for (const auto& rec : out.records) out.end = std::max(out.end, rec.ended);
  out.duration_s = std::chrono::duration<double>(out.end - out.start).count();
  return out;
}

}  // namespace pagedserve::loadgen
