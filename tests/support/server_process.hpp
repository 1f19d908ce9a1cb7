#pragma once
// Runs the real pagedserve binary for end-to-end tests: one-shot commands (`generate`, failing
// start-ups) with their output captured, and a `serve` process on an ephemeral port that is
// always stopped (SIGTERM, then SIGKILL) when the test ends. Every wait here has a deadline, so
// a broken server fails a test instead of hanging the run.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "e2e/http_client.hpp"
#include "support/sanitizer_env.hpp"
#include "support/test_paths.hpp"

extern char** environ;

namespace pagedserve::e2e {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// How a one-shot child process ended, with everything it wrote.
struct process_result {
  bool timed_out = false;  // it outlived its deadline and was killed
  bool exited = false;     // WIFEXITED: it ended by itself, not by a signal
  int exit_code = -1;      // WEXITSTATUS when exited
  int term_signal = 0;     // WTERMSIG when killed by a signal
  std::string out, err;    // all of its stdout and stderr
};

namespace detail {

struct pipe_fds {
  int read = -1, write = -1;
};

inline pipe_fds make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  return {fds[0], fds[1]};
}

// Starts argv[0] with stdin from /dev/null and stdout/stderr on the given fds (-1: /dev/null).
inline pid_t spawn(const std::vector<std::string>& argv, int out_fd, int err_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (out_fd >= 0)
    posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  else
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  if (err_fd >= 0)
    posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  else
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "posix_spawn " + argv[0]);
  return pid;
}

// Waits for pid until the deadline, then SIGKILLs it; returns its wait status.
inline int reap(pid_t pid, steady::time_point deadline, bool& timed_out) {
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return status;
    if (steady::now() >= deadline) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return status;
    }
    std::this_thread::sleep_for(5ms);
  }
}

inline void fill_status(process_result& r, int status) {
  r.exited = WIFEXITED(status);
  if (r.exited) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
}

}  // namespace detail

// Runs argv to completion (killed at the deadline), capturing stdout and stderr.
// Its deadline is stretched by PAGEDSERVE_TEST_TIME_SCALE; a sanitizer report on its stderr fails the test.
inline process_result run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  const auto deadline = steady::now() + test::scaled(timeout);
  const detail::pipe_fds out = detail::make_pipe(), err = detail::make_pipe();
  const pid_t pid = detail::spawn(argv, out.write, err.write);
  ::close(out.write);
  ::close(err.write);
  process_result r;
  pollfd fds[2] = {{out.read, POLLIN, 0}, {err.read, POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int n_open = 2;
  while (n_open > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
    if (left <= 0) break;
    if (::poll(fds, 2, static_cast<int>(left)) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t k = ::read(fds[i].fd, buf, sizeof buf);
      if (k > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(k));
      } else if (k == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --n_open;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  detail::fill_status(r, detail::reap(pid, deadline, r.timed_out));
  if (const auto report = test::sanitizer_report(r.err); !report.empty())
    ADD_FAILURE() << argv[0] << " " << (argv.size() > 1 ? argv[1] : "") << ": sanitizer report:\n" << report;
  return r;
}

inline std::filesystem::path model_path() { return test::shared_model("stories260K.bin"); }
inline std::filesystem::path tokenizer_path() { return test::shared_model("tok512.bin"); }

// The CLI's greedy completion of prompt: what the server must stream for the same request.
inline process_result cli_generate(const std::string& prompt, int max_tokens) {
  return run_process(
      {test::server_binary().string(), "generate", "--model", model_path().string(), "--tokenizer",
       tokenizer_path().string(), "--prompt", prompt, "--max-tokens", std::to_string(max_tokens), "--temperature", "0"},
      30s);
}

// What a server_process's constructor waits for: the model served (the "serving ... on
// http://127.0.0.1:PORT" line, then GET /health 200), or only the listening socket (the "listening on
// 127.0.0.1:PORT" line, logged before the model loads).
enum class server_wait { ready, listening };

// A `pagedserve serve` child on 127.0.0.1 and a port the kernel picks (--port 0; the port is
// read from the "serving ... on http://127.0.0.1:PORT" log line). Its stderr is drained by a
// thread all along, so the server can never block on a full pipe. Every deadline here is stretched by
// PAGEDSERVE_TEST_TIME_SCALE, and a sanitizer report in its stderr fails the test that ran it.
class server_process {
 public:
  // extra_args are appended to the command line (later flags win over earlier ones). The replica is
  // named "e2e" unless extra_args say otherwise.
  explicit server_process(std::vector<std::string> extra_args = {}, std::chrono::milliseconds startup = 10s,
                          server_wait wait = server_wait::ready) {
    std::vector<std::string> argv = {test::server_binary().string(),
                                     "serve",
                                     "--model",
                                     model_path().string(),
                                     "--tokenizer",
                                     tokenizer_path().string(),
                                     "--host",
                                     "127.0.0.1",
                                     "--port",
                                     "0",
                                     "--log-level",
                                     "info",
                                     "--replica-name",  // the label tests expect on /metrics series
                                     "e2e"};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    const auto deadline = steady::now() + test::scaled(startup);
    try {
      const detail::pipe_fds err = detail::make_pipe();
      pid_ = detail::spawn(argv, -1, err.write);
      ::close(err.write);
      err_fd_ = err.read;
    } catch (const std::exception& e) {
      error_ = e.what();
      return;
    }
    drain_ = std::thread([this] { drain_stderr(); });
    if (!wait_for_port(deadline, wait)) return;
    if (wait == server_wait::ready) wait_for_health(deadline);
  }

  ~server_process() { stop(); }
  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;

  // True once /health has answered 200 (server_wait::ready only).
  bool ready() const { return ready_; }
  // Why the server is not ready, with its stderr so far.
  std::string error() const { return error_ + "\n--- server stderr ---\n" + log(); }
  unsigned short port() const { return port_; }
  pid_t pid() const { return pid_; }  // -1 once stopped
  std::string log() const {
    std::lock_guard lock(mu_);
    return log_;
  }
  // Waits until the server's stderr contains text (true), or the timeout passes or it exits (false).
  bool wait_for_log(const std::string& text, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, test::scaled(timeout), [&] { return log_.find(text) != std::string::npos || eof_; }) &&
           log_.find(text) != std::string::npos;
  }

  // SIGTERM, up to `timeout` for a clean exit, then SIGKILL; how it ended (timed_out: it had to be
  // killed). Idempotent: later calls return the first result.
  process_result stop(std::chrono::milliseconds timeout = 3s) {
    signal(SIGTERM);
    return wait_exit(timeout);
  }

  // Sends sig to the server (no-op once it has been reaped).
  void signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }

  // Waits up to timeout for the server to exit by itself, then SIGKILLs it; how it ended.
  // Idempotent: later calls return the first result.
  process_result wait_exit(std::chrono::milliseconds timeout) {
    if (pid_ > 0) {
      detail::fill_status(stopped_, detail::reap(pid_, steady::now() + test::scaled(timeout), stopped_.timed_out));
      pid_ = -1;
      if (drain_.joinable()) drain_.join();
      if (err_fd_ >= 0) ::close(err_fd_);
      err_fd_ = -1;
      stopped_.err = log();
      if (const auto report = test::sanitizer_report(stopped_.err); !report.empty())
        ADD_FAILURE() << "pagedserve serve: sanitizer report:\n" << report;
    }
    return stopped_;
  }

 private:
  void drain_stderr() {
    char buf[4096];
    for (;;) {
      const ssize_t k = ::read(err_fd_, buf, sizeof buf);
      if (k < 0 && errno == EINTR) continue;
      std::lock_guard lock(mu_);
      if (k <= 0) {
        eof_ = true;
        cv_.notify_all();
        return;
      }
      log_.append(buf, static_cast<std::size_t>(k));
      cv_.notify_all();
    }
  }

  bool wait_for_port(steady::time_point deadline, server_wait wait) {
    static const std::regex serving_line(R"(serving '.*' .*on http://127\.0\.0\.1:(\d+))");
    static const std::regex listening_line(R"(listening on 127\.0\.0\.1:(\d+))");
    const std::regex& serving = wait == server_wait::ready ? serving_line : listening_line;
    std::unique_lock lock(mu_);
    std::smatch m;
    const bool found = cv_.wait_until(lock, deadline, [&] { return eof_ || std::regex_search(log_, m, serving); });
    if (found && !eof_) {
      port_ = static_cast<unsigned short>(std::stoi(m[1].str()));
      return true;
    }
    if (eof_ && std::regex_search(log_, m, serving)) port_ = static_cast<unsigned short>(std::stoi(m[1].str()));
    error_ = eof_ ? "server exited during start-up"
                  : std::string("no '") + (wait == server_wait::ready ? "serving ... on http://" : "listening on ") +
                        "127.0.0.1:PORT' line within the deadline";
    return false;
  }

  void wait_for_health(steady::time_point deadline) {
    std::string last;
    while (steady::now() < deadline) {
      auto res = http_get(port_, "/health", 1s);
      if (res && res->status == 200) {
        ready_ = true;
        return;
      }
      last = res ? "status " + std::to_string(res->status) : res.error();
      std::this_thread::sleep_for(20ms);
    }
    error_ = "GET /health did not answer 200 within the deadline (last: " + last + ")";
  }

  pid_t pid_ = -1;
  int err_fd_ = -1;
  std::thread drain_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string log_;   // all stderr so far, guarded by mu_
  bool eof_ = false;  // stderr closed (the server exited), guarded by mu_
  unsigned short port_ = 0;
  bool ready_ = false;
  std::string error_;
  process_result stopped_;  // how the process ended, once stop() ran
};

}  // namespace pagedserve::e2e
