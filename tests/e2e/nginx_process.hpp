#pragma once
// Debian's nginx in front of pagedserve replicas for end-to-end tests: the shipped configuration
// (config/nginx/, rendered by scripts/replicas.sh render, so the test runs what operators run) in a
// temporary prefix directory, unprivileged, in the foreground, on a free loopback port. Always
// stopped (SIGTERM, then SIGKILL) when the test ends; every wait has a deadline.
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/server_process.hpp"

namespace pagedserve::e2e {

// The nginx binary on PATH or in /usr/sbin (root's PATH has it, a user's may not); empty when absent.
inline std::filesystem::path nginx_binary() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string d; std::getline(ss, d, ':');) dirs.push_back(d);
  }
  dirs.push_back("/usr/sbin");
  for (const auto& d : dirs) {
    const std::filesystem::path p = std::filesystem::path(d) / "nginx";
    if (!d.empty() && ::access(p.c_str(), X_OK) == 0) return p;
  }
  return {};
}

// A loopback port free a moment ago (nginx cannot be told to pick one and report it).
inline unsigned short free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  unsigned short port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  if (fd >= 0) ::close(fd);
  return port;
}

// nginx proxying 127.0.0.1:port() to the given replica ports.
class nginx_process {
 public:
  nginx_process(const std::filesystem::path& binary, const std::vector<unsigned short>& replica_ports,
                std::chrono::milliseconds startup = std::chrono::seconds(10)) {
    char dir_template[] = "/tmp/pagedserve-nginx-XXXXXX";
    if (!::mkdtemp(dir_template)) {
      error_ = "mkdtemp failed";
      return;
    }
    dir_ = dir_template;
    // A port taken between our probe and nginx's bind makes nginx exit: try a few.
    for (int attempt = 0; attempt < 3 && !ready_; ++attempt) start(binary, replica_ports, startup);
  }
  ~nginx_process() {
    stop();
    std::error_code ignored;
    if (!dir_.empty() && ready_) std::filesystem::remove_all(dir_, ignored);  // kept after a failure
  }
  nginx_process(const nginx_process&) = delete;
  nginx_process& operator=(const nginx_process&) = delete;

  bool ready() const { return ready_; }
  unsigned short port() const { return port_; }
  std::string error() const { return error_ + "\n--- nginx stderr ---\n" + log(); }
  std::string log() const { return read_file(dir_ / "nginx.stderr"); }
  // One line per request: method, status, upstream address and session key (log_format pagedserve).
  std::string access_log() const { return read_file(dir_ / "access.log"); }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);  // fast shutdown: the master ends its workers
    bool timed_out = false;
    detail::reap(pid_, steady::now() + std::chrono::seconds(5), timed_out);
    pid_ = -1;
  }

 private:
  static std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  void start(const std::filesystem::path& binary, const std::vector<unsigned short>& replica_ports,
             std::chrono::milliseconds startup) {
    port_ = free_loopback_port();
    std::vector<std::string> render = {"/bin/bash", std::string(PAGEDSERVE_SOURCE_DIR) + "/scripts/replicas.sh",
                                       "render", dir_.string(), "127.0.0.1:" + std::to_string(port_)};
    for (const unsigned short p : replica_ports) render.push_back("127.0.0.1:" + std::to_string(p));
    const process_result rendered = run_process(render, std::chrono::seconds(10));
    if (!rendered.exited || rendered.exit_code != 0) {
      error_ = "scripts/replicas.sh render failed: " + rendered.err;
      return;
    }
    const int err_fd = ::open((dir_ / "nginx.stderr").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    try {
      pid_ = detail::spawn({binary.string(), "-p", dir_.string(), "-c", (dir_ / "nginx.conf").string(), "-e", "stderr"},
                           -1, err_fd);
    } catch (const std::exception& e) {
      error_ = e.what();
    }
    if (err_fd >= 0) ::close(err_fd);
    if (pid_ <= 0) return;
    // Ready once a request goes through to a replica.
    const auto deadline = steady::now() + startup;
    std::string last;
    while (steady::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        error_ = "nginx exited during start-up";
        return;
      }
      auto res = http_get(port_, "/health", std::chrono::seconds(1));
      if (res && res->status == 200) {
        ready_ = true;
        return;
      }
      last = res ? "status " + std::to_string(res->status) : res.error();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    error_ = "GET /health through nginx did not answer 200 within the deadline (last: " + last + ")";
    stop();
  }

  std::filesystem::path dir_;  // nginx's prefix: nginx.conf, pagedserve.conf, logs, temp files
  pid_t pid_ = -1;
  unsigned short port_ = 0;
  bool ready_ = false;
  std::string error_;
};

}  // namespace pagedserve::e2e
