#pragma once
// A synchronous WebSocket client for end-to-end tests, and the server frames of /v1/ws parsed
// into a struct. Every call takes a timeout. Operations run asynchronously on a private
// io_context driven until they finish or the deadline passes; a read that times out stays
// pending and a later read() picks its frame up, so "nothing arrived for 300 ms" is a safe
// question to ask without breaking the connection. The Beast code lives in ws_client.cpp, built
// once (test_support).
#include <chrono>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pagedserve::e2e {

struct ws_frame {
  bool text = true;  // false for a binary frame
  std::string payload;
};

class ws_client {
 public:
  ws_client();
  ~ws_client();
  ws_client(const ws_client&) = delete;
  ws_client& operator=(const ws_client&) = delete;

  // TCP connect and WebSocket upgrade to ws://127.0.0.1:port/target, with extra request headers
  // on the upgrade (e.g. X-Session-Id for a load balancer).
  std::expected<void, std::string> connect(unsigned short port, const std::string& target = "/v1/ws",
                                           std::chrono::milliseconds timeout = std::chrono::seconds(5),
                                           std::vector<std::pair<std::string, std::string>> headers = {});

  std::expected<void, std::string> send_text(std::string_view data,
                                             std::chrono::milliseconds timeout = std::chrono::seconds(5));
  std::expected<void, std::string> send_binary(std::string_view data,
                                               std::chrono::milliseconds timeout = std::chrono::seconds(5));

  // The next frame; "timeout" when none came in time (the connection stays usable), otherwise
  // why the connection ended.
  std::expected<ws_frame, std::string> read(std::chrono::milliseconds timeout);

  // The close handshake (code 1000), bounded by timeout.
  void close(std::chrono::milliseconds timeout = std::chrono::seconds(2));

  // Before connect: a small kernel receive buffer, so a client that stops reading fills it (and
  // the server's send buffer) quickly.
  void shrink_receive_buffer(int bytes);

  // Drops the TCP connection at once with a reset: no close frame, no FIN handshake.
  void abort();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// One server frame of /v1/ws. Fields absent from a frame keep their defaults.
struct server_frame {
  std::string type;               // token, done or error
  std::optional<std::string> id;  // nullopt when the frame's id is JSON null (or missing)
  std::string text;               // token: the detokenized text
  std::vector<std::int64_t> token_ids;
  std::string finish_reason;                                // done
  std::int64_t prompt_tokens = -1, completion_tokens = -1;  // done: usage
  bool has_timings = false;                                 // done: carries a timings object
  double total_ms = -1;                                     // done: timings.total_ms, accepted to done on the server
  std::string code, message;                                // error
  std::string raw;                                          // the frame as received
};

std::expected<server_frame, std::string> parse_server_frame(const std::string& raw);

// {"type":"generate","id":ID,"prompt":PROMPT,"params":{"max_tokens":N,"temperature":0<extra>}}
// extra_params is raw JSON appended inside params, e.g. R"(,"ignore_eos":true)".
std::string generate_frame(std::string_view id, std::string_view prompt, int max_tokens,
                           std::string_view extra_params = "");

std::string cancel_frame(std::string_view id);

}  // namespace pagedserve::e2e
