#pragma once
// HTTP GET for end-to-end tests, bounded by a deadline, and /health read into a struct. The GET is
// the product's own blocking client (src/hub/hub_client.hpp), as loadgen's is. Deadlines here and in
// the other e2e clients stretch by PAGEDSERVE_TEST_TIME_SCALE (support/sanitizer_env.hpp).
#include <chrono>
#include <cstdint>
#include <expected>
#include <string>

namespace pagedserve::e2e {

struct http_response {
  int status = 0;
  std::string content_type;
  std::string body;
};

// GET target from 127.0.0.1:port; an error string on connect/IO failure or timeout.
std::expected<http_response, std::string> http_get(unsigned short port, const std::string& target,
                                                   std::chrono::milliseconds timeout = std::chrono::seconds(2));

// The fields of GET /health the tests rely on.
struct health_status {
  std::string status, model;
  std::int64_t running = -1, waiting = -1;                 // sequences in the scheduler's queues
  std::int64_t kv_blocks_total = -1, kv_blocks_free = -1;  // KV pool, in blocks
  bool idle() const { return running == 0 && waiting == 0 && kv_blocks_free == kv_blocks_total; }
};

// Parses a /health body; an error names the first missing or mistyped field.
std::expected<health_status, std::string> parse_health(const std::string& body);

std::expected<health_status, std::string> get_health(unsigned short port);

// Polls /health until the engine holds nothing (no running or waiting sequence, every KV block
// free) or the timeout passes; returns the last status seen, or the last error.
std::expected<health_status, std::string> wait_for_idle(unsigned short port, std::chrono::milliseconds timeout);

}  // namespace pagedserve::e2e
