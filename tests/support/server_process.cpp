// `pagedserve serve` as a child process (server_process.hpp), compiled once into test_support.
#include "support/server_process.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <regex>

#include "support/http_client.hpp"
#include "support/sanitizer_env.hpp"

namespace pagedserve::e2e {

process_result cli_generate(const std::string& prompt, int max_tokens) {
  return run_process(
      {test::server_binary().string(), "generate", "--model", model_path().string(), "--tokenizer",
       tokenizer_path().string(), "--prompt", prompt, "--max-tokens", std::to_string(max_tokens), "--temperature", "0"},
      30s);
}

server_process::server_process(std::vector<std::string> extra_args, std::chrono::milliseconds startup,
                               server_wait wait) {
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
  start(argv, startup, wait);
}

server_process::server_process(exact_args exact, std::chrono::milliseconds startup, server_wait wait) {
  std::vector<std::string> argv = {test::server_binary().string()};
  argv.insert(argv.end(), exact.args.begin(), exact.args.end());
  start(argv, startup, wait);
}

void server_process::start(const std::vector<std::string>& argv, std::chrono::milliseconds startup, server_wait wait) {
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

bool server_process::wait_for_log(const std::string& text, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, test::scaled(timeout), [&] { return log_.find(text) != std::string::npos || eof_; }) &&
         log_.find(text) != std::string::npos;
}

process_result server_process::wait_exit(std::chrono::milliseconds timeout) {
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

void server_process::drain_stderr() {
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

bool server_process::wait_for_port(steady::time_point deadline, server_wait wait) {
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

void server_process::wait_for_health(steady::time_point deadline) {
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

}  // namespace pagedserve::e2e
