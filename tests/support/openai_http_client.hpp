#pragma once
// A raw HTTP/1.1 client for the OpenAI API end-to-end tests: exact bytes out (pipelining,
// oversized bodies, malformed JSON), responses read back with Content-Length or chunked framing,
// SSE events split out, and a socket that can be dropped mid-stream. Blocking POSIX sockets with
// poll() deadlines, so every wait is bounded.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <expected>
#include <map>
#include <string>
#include <vector>

#include "support/sanitizer_env.hpp"

namespace pagedserve::e2e {

struct raw_response {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;                            // de-chunked
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// "POST path" with a JSON body (or any bytes), as one string ready to send.
inline std::string http_post_bytes(const std::string& path, const std::string& body,
                                   const std::vector<std::string>& extra_headers = {}, bool keep_alive = true) {
  std::string out = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
  for (const auto& h : extra_headers) out += h + "\r\n";
  if (!keep_alive) out += "Connection: close\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return out;
}

inline std::string http_get_bytes(const std::string& path, const std::vector<std::string>& extra_headers = {}) {
  std::string out = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (const auto& h : extra_headers) out += h + "\r\n";
  return out + "\r\n";
}

// The payloads of the "data:" lines of an SSE body, in order ("[DONE]" included).
inline std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < body.size()) {
    std::size_t end = body.find('\n', pos);
    if (end == std::string::npos) end = body.size();
    const std::string line = body.substr(pos, end - pos);
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
    pos = end + 1;
  }
  return out;
}

// GET /metrics parsed: series text as written (name{labels}) -> value.
inline std::map<std::string, double> parse_metrics(const std::string& text) {
  std::map<std::string, double> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

class http_conn {
 public:
  http_conn() = default;
  ~http_conn() { close(); }
  http_conn(const http_conn&) = delete;
  http_conn& operator=(const http_conn&) = delete;

  // source: the loopback address to connect from (127.0.0.2 looks like another client to the server).
  bool connect(unsigned short port, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return false;
    if (source) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      if (::inet_pton(AF_INET, source, &from.sin_addr) != 1 ||
          ::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0)
        return false;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }

  bool send(const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t k = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (k <= 0) return false;
      sent += static_cast<std::size_t>(k);
    }
    return true;
  }

  // Half-closes: the server reads end-of-stream, and may still answer.
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

  // Drops the connection with a reset (SO_LINGER 0): no FIN handshake.
  void reset() {
    if (fd_ < 0) return;
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }

  // Closes the socket (the server sees FIN, or RST when unread data remains).
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // Status line and headers of the next response.
  std::expected<raw_response, std::string> read_head(std::chrono::milliseconds timeout) {
    return read_head_by(std::chrono::steady_clock::now() + test::scaled(timeout));
  }

  // The data of the next HTTP chunk of a chunked body; empty at the last chunk.
  std::expected<std::string, std::string> read_chunk(std::chrono::milliseconds timeout) {
    return read_chunk_by(std::chrono::steady_clock::now() + test::scaled(timeout));
  }

  // A whole response: head, then the body by Content-Length or chunks.
  std::expected<raw_response, std::string> read_response(std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + test::scaled(timeout);
    auto r = read_head_by(deadline);
    if (!r) return r;
    if (r->header("transfer-encoding") == "chunked") {
      for (;;) {
        auto chunk = read_chunk_by(deadline);
        if (!chunk) return std::unexpected(chunk.error());
        if (chunk->empty()) break;
        r->body += *chunk;
      }
    } else if (const std::string length = r->header("content-length"); !length.empty()) {
      const std::size_t n = std::stoul(length);
      while (buf_.size() < n)
        if (auto err = fill(deadline); !err.empty()) return std::unexpected("reading the body: " + err);
      r->body = buf_.substr(0, n);
      buf_.erase(0, n);
    }
    return r;
  }

  // True when the server closed the connection (EOF) within the timeout.
  bool closed_by_server(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + test::scaled(timeout);
    for (;;) {
      const std::string err = fill(deadline);
      if (err == "closed" || err.starts_with("recv")) return true;
      if (!err.empty()) return false;
    }
  }

 private:
  std::expected<raw_response, std::string> read_head_by(std::chrono::steady_clock::time_point deadline) {
    std::size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
      if (auto err = fill(deadline); !err.empty()) return std::unexpected("reading the head: " + err);
    raw_response r;
    const std::string head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    std::size_t line_end = head.find("\r\n");
    const std::string status_line = head.substr(0, line_end);
    if (status_line.size() < 12) return std::unexpected("bad status line: " + status_line);
    r.status = std::stoi(status_line.substr(9, 3));
    while (line_end != std::string::npos) {
      const std::size_t start = line_end + 2;
      line_end = head.find("\r\n", start);
      const std::string line = head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
      const std::size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      r.headers[name] = value;
    }
    return r;
  }

  std::expected<std::string, std::string> read_chunk_by(std::chrono::steady_clock::time_point deadline) {
    std::size_t eol;
    while ((eol = buf_.find("\r\n")) == std::string::npos)
      if (auto err = fill(deadline); !err.empty()) return std::unexpected("reading a chunk size: " + err);
    const std::size_t size = std::stoul(buf_.substr(0, eol), nullptr, 16);
    while (buf_.size() < eol + 2 + size + 2)
      if (auto err = fill(deadline); !err.empty()) return std::unexpected("reading a chunk: " + err);
    std::string data = buf_.substr(eol + 2, size);
    buf_.erase(0, eol + 2 + size + 2);
    return data;
  }

  // Reads more into buf_; an error text ("closed", "timeout", ...) or empty.
  std::string fill(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return "timeout";
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r == 0) return "timeout";
    if (r < 0) return "poll failed";
    char tmp[16384];
    const ssize_t k = ::recv(fd_, tmp, sizeof tmp, 0);
    if (k == 0) return "closed";
    if (k < 0) return "recv failed";
    buf_.append(tmp, static_cast<std::size_t>(k));
    return {};
  }

  int fd_ = -1;
  std::string buf_;
};

// One request on a fresh connection: the whole response, or why there is none.
inline std::expected<raw_response, std::string> http_exchange(unsigned short port, const std::string& bytes,
                                                              std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  http_conn c;
  if (!c.connect(port)) return std::unexpected("cannot connect to port " + std::to_string(port));
  if (!c.send(bytes)) return std::unexpected("send failed");
  return c.read_response(timeout);
}

}  // namespace pagedserve::e2e
