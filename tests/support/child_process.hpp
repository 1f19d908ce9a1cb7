#pragma once
// Child processes for the end-to-end tests and load-tests' loadgen tests: a command run to its end
// with its output captured, and the spawn/reap steps other harnesses (nginx, a pseudo-terminal)
// build on. Every wait has a deadline, stretched by PAGEDSERVE_TEST_TIME_SCALE, so a stuck child
// fails a test instead of hanging the run; a sanitizer report on a child's stderr fails the test.
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

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

// A close-on-exec pipe; throws std::system_error when the system has none left.
pipe_fds make_pipe();
// Starts argv[0] with stdin from /dev/null and stdout/stderr on the given fds (-1: /dev/null);
// throws std::system_error when it cannot start.
pid_t spawn(const std::vector<std::string>& argv, int out_fd, int err_fd);
// Waits for pid until the deadline, then SIGKILLs it; returns its wait status.
int reap(pid_t pid, steady::time_point deadline, bool& timed_out);
void fill_status(process_result& r, int status);

}  // namespace detail

// Runs argv to completion (killed at the deadline), capturing stdout and stderr.
// Its deadline is stretched by PAGEDSERVE_TEST_TIME_SCALE; a sanitizer report on its stderr fails the test.
process_result run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// Runs argv with stdin, stdout and stderr on a pseudo-terminal (200 columns), as from a user's shell,
// until it exits (killed at the deadline); everything it wrote to the terminal is in `out`.
process_result run_on_terminal(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

}  // namespace pagedserve::e2e
