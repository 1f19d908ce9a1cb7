#pragma once
// `pagedserve serve` on an ephemeral port for the end-to-end tests and load-tests' loadgen tests,
// always stopped (SIGTERM, then SIGKILL) when the test ends, and the CLI's greedy completion to
// compare it with. The served model is the repository's stories260K (tests/data).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
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
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/child_process.hpp"
#include "support/http_client.hpp"
#include "support/sanitizer_env.hpp"
#include "support/test_paths.hpp"

namespace pagedserve::e2e {

inline std::filesystem::path model_path() { return test::model_file("stories260K.bin"); }
inline std::filesystem::path tokenizer_path() { return test::model_file("tok512.bin"); }

// The CLI's greedy completion of prompt: what the server must stream for the same request.
process_result cli_generate(const std::string& prompt, int max_tokens);

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
                          server_wait wait = server_wait::ready);
  // The binary with exactly these arguments (args[0] is the subcommand), none of the defaults above: for
  // tests of the command line itself. It must still listen on 127.0.0.1 and log its port.
  struct exact_args {
    std::vector<std::string> args;
  };
  explicit server_process(exact_args exact, std::chrono::milliseconds startup = 10s,
                          server_wait wait = server_wait::ready);

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
  bool wait_for_log(const std::string& text, std::chrono::milliseconds timeout);

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
  process_result wait_exit(std::chrono::milliseconds timeout);

 private:
  void start(const std::vector<std::string>& argv, std::chrono::milliseconds startup, server_wait wait);
  void drain_stderr();
  bool wait_for_port(steady::time_point deadline, server_wait wait);
  void wait_for_health(steady::time_point deadline);

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
