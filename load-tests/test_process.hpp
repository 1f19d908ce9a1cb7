#pragma once
// Child processes for the loadgen tests: the real pagedserve on an ephemeral port (always stopped:
// SIGTERM, then SIGKILL) and loadgen runs with a deadline. Output goes to files in the test's
// scratch directory, so no pipe can fill up and block a child.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/sanitizer_env.hpp"

extern char** environ;

namespace pagedserve::loadgen::test {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

inline std::string file_read(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Starts argv with stdin from /dev/null and stdout, stderr into the given files; -1 on failure.
inline pid_t spawn(const std::vector<std::string>& argv, const std::filesystem::path& out,
                   const std::filesystem::path& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// Waits for pid until the deadline; its exit code, or nullopt when it was killed (deadline or signal).
inline std::optional<int> wait_exit(pid_t pid, steady::time_point deadline) {
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? std::optional<int>(WEXITSTATUS(status)) : std::nullopt;
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (steady::now() >= deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return std::nullopt;
    }
    std::this_thread::sleep_for(5ms);
  }
}

// SIGTERM, up to 3 s (times PAGEDSERVE_TEST_TIME_SCALE) to exit, then SIGKILL.
inline void stop(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  wait_exit(pid, steady::now() + pagedserve::test::scaled(3s));
}

// Fails the current test when a child's stderr holds a sanitizer report.
inline void expect_no_sanitizer_report(const std::string& who, const std::string& err) {
  if (const auto report = pagedserve::test::sanitizer_report(err); !report.empty())
    ADD_FAILURE() << who << ": sanitizer report:\n" << report;
}

// A command run to its end (or killed at its deadline), with what it printed.
struct run_result {
  std::optional<int> exit_code;  // nullopt: killed
  std::string out, err;
};

inline run_result run(const std::vector<std::string>& argv, const std::filesystem::path& scratch, const std::string& name,
                      std::chrono::seconds timeout) {
  const auto out = scratch / (name + ".stdout"), err = scratch / (name + ".stderr");
  run_result r;
  const pid_t pid = spawn(argv, out, err);
  if (pid < 0) {
    r.err = "cannot start " + argv[0];
    return r;
  }
  r.exit_code = wait_exit(pid, steady::now() + pagedserve::test::scaled(timeout));
  r.out = file_read(out);
  r.err = file_read(err);
  expect_no_sanitizer_report(name, r.err);
  return r;
}

// `pagedserve serve` on 127.0.0.1 and a port the kernel picks, read from its start-up log line;
// a sanitizer report in its log fails the test that ran it.
class server_process {
 public:
  server_process(const std::vector<std::string>& args, const std::filesystem::path& scratch) : log_(scratch / "server.log") {
    pid_ = spawn(args, scratch / "server.stdout", log_);
    if (pid_ < 0) {
      error_ = "cannot start " + args[0];
      return;
    }
    static const std::regex serving(R"(serving .* on http://127\.0\.0\.1:(\d+))");
    const auto deadline = steady::now() + pagedserve::test::scaled(20s);
    while (steady::now() < deadline) {
      std::smatch m;
      const std::string text = file_read(log_);
      if (std::regex_search(text, m, serving)) {
        port_ = static_cast<unsigned short>(std::stoi(m[1].str()));
        return;
      }
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        error_ = "the server exited during start-up";
        return;
      }
      std::this_thread::sleep_for(10ms);
    }
    error_ = "no 'serving ... on http://127.0.0.1:PORT' line within 20 s";
  }
  ~server_process() {
    stop(pid_);
    expect_no_sanitizer_report("pagedserve serve", file_read(log_));
  }
  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;

  unsigned short port() const { return port_; }
  bool ready() const { return port_ != 0; }
  std::string error() const { return error_ + "\n--- server log ---\n" + file_read(log_); }

 private:
  std::filesystem::path log_;
  pid_t pid_ = -1;
  unsigned short port_ = 0;
  std::string error_;
};

}  // namespace pagedserve::loadgen::test
