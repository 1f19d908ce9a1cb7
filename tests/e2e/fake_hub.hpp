#pragma once
// A Hugging Face hub on 127.0.0.1 for the hub download tests: the real API and resolve paths, LFS
// files redirected (absolute Location) to a CDN on a second port, small files through the hub's
// relative resolve-cache redirect, ETag / X-Linked-Etag / X-Linked-Size / X-Repo-Commit headers,
// Range requests, an optional token, and faults to inject: a connection cut mid-body, a corrupted
// byte, a Range ignored, a throttled rate. Every request is recorded for the tests to inspect.
// One thread per connection, one response per connection (Connection: close).
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace pagedserve::e2e {

struct fake_hub_file {
  std::string name;   // path in the repo
  std::string bytes;  // content
  bool lfs = false;   // served from the CDN, listed with lfs.sha256
};

struct fake_hub_request {
  bool cdn = false;           // to the CDN port (else the hub's)
  std::string target;         // request target
  std::string range;          // the Range header, if any
  std::string authorization;  // the Authorization header, if any
  std::string sni;            // HTTPS: the server name the client sent (SNI), if any
};

// HTTPS instead of HTTP, on both ports: the PEM files of the server's certificate and key.
struct fake_hub_tls {
  std::string cert_file, key_file;
};

class fake_hub {
 public:
  explicit fake_hub(std::optional<fake_hub_tls> tls = std::nullopt);
  ~fake_hub();
  fake_hub(const fake_hub&) = delete;
  fake_hub& operator=(const fake_hub&) = delete;

  // Publishes repo ("org/name") at a commit derived from its content; "main" resolves to it.
  void add_repo(const std::string& repo, std::vector<fake_hub_file> files);
  std::string commit(const std::string& repo) const;
  std::string endpoint() const;  // http(s)://127.0.0.1:PORT (HF_ENDPOINT)
  unsigned short port() const;

  // Faults and policy; set them before a client runs.
  void require_token(std::string token);  // API and resolve answer 401 without "Bearer <token>"
  // The next `times` downloads of `file` send only its first `bytes` body bytes, then close.
  void cut_after(const std::string& file, std::uint64_t bytes, int times);
  void corrupt(const std::string& file);             // one byte flipped in what is served; listing unchanged
  void ignore_range(bool on);                        // answer 200 with the whole file to Range requests
  void throttle(std::uint64_t bytes_per_second);     // body bytes of CDN downloads; 0 = full speed

  std::vector<fake_hub_request> requests() const;
  // How many body bytes of `file` went out, over all its downloads.
  std::uint64_t bytes_sent(const std::string& file) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace pagedserve::e2e
