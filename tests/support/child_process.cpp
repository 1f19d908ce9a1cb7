// Child processes (child_process.hpp), compiled once into test_support.
#include "support/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>

#include "support/sanitizer_env.hpp"

extern char** environ;

namespace pagedserve::e2e {

namespace detail {

pipe_fds make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  return {fds[0], fds[1]};
}

pid_t spawn(const std::vector<std::string>& argv, int out_fd, int err_fd) {
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

int reap(pid_t pid, steady::time_point deadline, bool& timed_out) {
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

void fill_status(process_result& r, int status) {
  r.exited = WIFEXITED(status);
  if (r.exited) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
}

}  // namespace detail

process_result run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
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

process_result run_on_terminal(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  winsize size{};
  size.ws_row = 40;
  size.ws_col = 200;
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, &size);
  process_result r;
  if (pid < 0) {
    ADD_FAILURE() << "forkpty: " << std::strerror(errno);
    return r;
  }
  if (pid == 0) {  // the child: nothing but exec (the test process has threads)
    ::execve(args[0], args.data(), environ);
    ::_exit(127);
  }
  const auto deadline = steady::now() + test::scaled(timeout);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
    if (left <= 0) break;
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    char buf[4096];
    const ssize_t k = ::read(master, buf, sizeof buf);
    if (k > 0) r.out.append(buf, static_cast<std::size_t>(k));
    else if (k == 0 || errno != EINTR) break;  // EIO: the child closed its end (it exited)
  }
  ::close(master);
  detail::fill_status(r, detail::reap(pid, deadline, r.timed_out));
  return r;
}

}  // namespace pagedserve::e2e
