// HTTP pipelining without reading (issue 17 item 3) over a real socket: a client sends thousands of
// requests for a static file (a 42-byte GET answered with ~13 KB) and never reads. The server must stop
// reading that client's requests once its queued answers pass max_outbound_bytes, so its memory stays
// bounded (checked on the server's peak RSS, against a bound far above normal), while a well-behaved
// client beside it is served; the hostile client then still gets correct answers, in order.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <iostream>
#include <thread>

#include "e2e/e2e_check.hpp"
#include "e2e/proc_memory.hpp"
#include "support/server_process.hpp"
#include "support/sanitizer_env.hpp"
#include "e2e/well_behaved_client.hpp"

namespace pagedserve::e2e {
namespace {

using namespace std::chrono_literals;

// A raw client with a small receive buffer that sends without ever blocking for long.
class pipelining_client {
 public:
  ~pipelining_client() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connect(unsigned short port, int receive_buffer) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return false;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return false;
    return ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK) == 0;
  }
  // Sends bytes until all are out or the server has taken nothing for `stall`; how many went.
  std::size_t send_until_stalled(const std::string& bytes, std::chrono::milliseconds stall) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(test::scaled(stall).count())) <= 0) break;
      const ssize_t k = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (k < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (k <= 0) break;
      sent += static_cast<std::size_t>(k);
    }
    return sent;
  }
  unsigned short local_port() const {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    return ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0 ? ntohs(addr.sin_port) : 0;
  }
  // Reads the next n responses (Content-Length framed); the status and body size of each.
  std::vector<std::pair<int, std::size_t>> read_responses(int n, std::chrono::milliseconds timeout) {
    std::vector<std::pair<int, std::size_t>> out;
    const auto deadline = steady::now() + test::scaled(timeout);
    while (static_cast<int>(out.size()) < n && steady::now() < deadline) {
      const std::size_t head_end = buf_.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        const std::size_t cl = buf_.find("Content-Length: ");
        if (cl == std::string::npos || cl > head_end) break;
        const std::size_t length = std::stoul(buf_.substr(cl + 16));
        if (buf_.size() >= head_end + 4 + length) {
          out.emplace_back(std::stoi(buf_.substr(9, 3)), length);
          buf_.erase(0, head_end + 4 + length);
          continue;
        }
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char tmp[65536];
      const ssize_t k = ::recv(fd_, tmp, sizeof tmp, 0);
      if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) break;
      if (k > 0) buf_.append(tmp, static_cast<std::size_t>(k));
    }
    return out;
  }

 private:
  int fd_ = -1;
  std::string buf_;
};

// Bytes the server has not read yet on its end of the connection 127.0.0.1:server_port <-
// 127.0.0.1:client_port (rx_queue in /proc/net/tcp); nullopt when the socket is not listed.
std::optional<std::size_t> server_unread_bytes(unsigned short server_port, unsigned short client_port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  char local[64], remote[64];
  char want_local[16], want_remote[16];
  std::snprintf(want_local, sizeof want_local, "0100007F:%04X", server_port);
  std::snprintf(want_remote, sizeof want_remote, "0100007F:%04X", client_port);
  while (std::getline(in, line)) {
    unsigned tx = 0, rx = 0;
    if (std::sscanf(line.c_str(), " %*d: %63s %63s %*x %x:%x", local, remote, &tx, &rx) == 4 &&
        std::string_view(local) == want_local && std::string_view(remote) == want_remote)
      return rx;
  }
  return std::nullopt;
}

TEST(pipelining, a_client_that_never_reads_costs_bounded_memory) {
  E2E_REQUIRE_MODEL();
  const auto file = std::filesystem::path(PAGEDSERVE_SOURCE_DIR) / "web" / "app.js";
  ASSERT_TRUE(std::filesystem::exists(file));
  const std::size_t file_size = std::filesystem::file_size(file);
  server_process server;  // max_outbound_bytes 4 MiB
  ASSERT_TRUE(server.ready()) << server.error();
  const double alone = well_behaved_request_ms(server.port());
  EXPECT_GT(alone, 0) << "the well-behaved request failed alone";
  const std::uint64_t rss_before = proc_status_bytes(server.pid(), "VmRSS");

  constexpr int n_requests = 20000;  // ~260 MB of answers if the server queued them all
  std::string requests;
  for (int i = 0; i < n_requests; ++i) requests += "GET /app.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  pipelining_client hostile;
  ASSERT_TRUE(hostile.connect(server.port(), 4096));
  const std::size_t sent = hostile.send_until_stalled(requests, 3s);
  // Until the server has read everything or stopped reading: what it holds then is what it would keep.
  std::optional<std::size_t> unread = server_unread_bytes(server.port(), hostile.local_port());
  for (int unchanged = 0, i = 0; unread && *unread > 0 && unchanged < 10 && i < 300; ++i) {
    std::this_thread::sleep_for(100ms);
    const auto now = server_unread_bytes(server.port(), hostile.local_port());
    unchanged = now == unread ? unchanged + 1 : 0;
    unread = now;
  }
  // The hostile connection stays open and unread while the well-behaved client is served.
  const double beside = well_behaved_request_ms(server.port());
  auto page = http_get(server.port(), "/app.js", 10s);
  const std::uint64_t peak = proc_status_bytes(server.pid(), "VmHWM");
  std::cout << "pipelining " << n_requests << " GET /app.js (" << file_size << " B each), never reading: "
            << sent << " of " << requests.size() << " request bytes taken, " << (unread ? *unread : 0)
            << " left unread by the server; server RSS " << mib(rss_before)
            << " MiB before, peak " << mib(peak) << " MiB; well-behaved request " << alone << " ms alone, "
            << beside << " ms beside it\n";
  EXPECT_GT(beside, 0) << "the well-behaved request failed beside the pipelining client";
  ASSERT_TRUE(page) << page.error();
  EXPECT_EQ(page->status, 200);
  ASSERT_GT(rss_before, 0u);
  // The bound is 4 MiB of answers plus 16 requests read ahead; 64 MiB is far above that and far below
  // what queuing every answer takes.
  EXPECT_LT(peak, rss_before + (64u << 20) + test::sanitizer_rss_allowance_bytes)
      << "the server queued answers for a client that does not read";
  // Backpressure: the server stopped reading, so requests still wait in its receive queue (a server
  // without the bound reads them all).
  ASSERT_TRUE(unread) << "the server's end of the connection is not in /proc/net/tcp";
  EXPECT_GT(*unread, 0u);

  // Backpressure delays answers, never garbles them: the first ones arrive whole and in order.
  const auto answers = hostile.read_responses(200, 30s);
  ASSERT_EQ(answers.size(), 200u);
  for (const auto& [status, size] : answers) {
    EXPECT_EQ(status, 200);
    EXPECT_EQ(size, file_size);
  }
}

}  // namespace
}  // namespace pagedserve::e2e
