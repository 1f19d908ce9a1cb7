#pragma once
// A synchronous WebSocket client for end-to-end tests, and the server frames of /v1/ws parsed
// into a struct. Every call takes a timeout. Operations run asynchronously on a private
// io_context driven until they finish or the deadline passes; a read that times out stays
// pending and a later read() picks its frame up, so "nothing arrived for 300 ms" is a safe
// question to ask without breaking the connection.
#include <simdjson.h>

#include <boost/beast/websocket.hpp>
#include <deque>
#include <optional>
#include <vector>

#include "e2e/http_client.hpp"

namespace pagedserve::e2e {

namespace websocket = beast::websocket;

struct ws_frame {
  bool text = true;  // false for a binary frame
  std::string payload;
};

class ws_client {
 public:
  ws_client() : ws_(ioc_) {}
  ~ws_client() {
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
    ioc_.restart();
    ioc_.poll();  // let aborted handlers run while the members they touch still live
  }
  ws_client(const ws_client&) = delete;
  ws_client& operator=(const ws_client&) = delete;

  // TCP connect and WebSocket upgrade to ws://127.0.0.1:port/target, with extra request headers
  // on the upgrade (e.g. X-Session-Id for a load balancer).
  std::expected<void, std::string> connect(unsigned short port, const std::string& target = "/v1/ws",
                                           std::chrono::milliseconds timeout = std::chrono::seconds(5),
                                           std::vector<std::pair<std::string, std::string>> headers = {}) {
    if (!headers.empty())
      ws_.set_option(websocket::stream_base::decorator([headers = std::move(headers)](websocket::request_type& req) {
        for (const auto& [name, value] : headers) req.set(name, value);
      }));
    auto& tcp_layer = beast::get_lowest_layer(ws_);
    timeout = test::scaled(timeout);
    tcp_layer.expires_after(timeout);
    std::optional<beast::error_code> result;
    tcp_layer.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), [&](beast::error_code ec) {
      if (ec) {
        result = ec;
        return;
      }
      ws_.async_handshake("127.0.0.1:" + std::to_string(port), target, [&](beast::error_code ec) { result = ec; });
    });
    run_until([&] { return result.has_value(); }, steady_deadline(timeout + std::chrono::seconds(1)));
    // From here on deadlines are ours: a tcp_stream expiry would kill a read we mean to resume.
    tcp_layer.expires_never();
    beast::error_code ignored;  // send each frame at once, as a streaming client would
    tcp_layer.socket().set_option(tcp::no_delay(true), ignored);
    if (!result) return std::unexpected("connect: timed out");
    if (*result) return std::unexpected("connect: " + result->message());
    return {};
  }

  std::expected<void, std::string> send_text(std::string_view data,
                                             std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    return send(data, true, timeout);
  }
  std::expected<void, std::string> send_binary(std::string_view data,
                                               std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    return send(data, false, timeout);
  }

  // The next frame; "timeout" when none came in time (the connection stays usable), otherwise
  // why the connection ended.
  std::expected<ws_frame, std::string> read(std::chrono::milliseconds timeout) {
    if (inbox_.empty() && !reading_ && !failed_) start_read();
    run_until([&] { return !inbox_.empty() || failed_; }, steady_deadline(timeout));
    if (!inbox_.empty()) {
      ws_frame f = std::move(inbox_.front());
      inbox_.pop_front();
      return f;
    }
    if (failed_) return std::unexpected(*failed_);
    return std::unexpected("timeout");
  }

  // The close handshake (code 1000), bounded by timeout.
  void close(std::chrono::milliseconds timeout = std::chrono::seconds(2)) {
    std::optional<beast::error_code> result;
    ws_.async_close(websocket::close_code::normal, [&](beast::error_code ec) { result = ec; });
    run_until([&] { return result.has_value(); }, steady_deadline(test::scaled(timeout)));
  }

  // Before connect: a small kernel receive buffer, so a client that stops reading fills it (and
  // the server's send buffer) quickly.
  void shrink_receive_buffer(int bytes) {
    auto& socket = beast::get_lowest_layer(ws_).socket();
    beast::error_code ignored;
    socket.open(tcp::v4(), ignored);
    socket.set_option(asio::socket_base::receive_buffer_size(bytes), ignored);
  }

  // Drops the TCP connection at once with a reset: no close frame, no FIN handshake.
  void abort() {
    auto& socket = beast::get_lowest_layer(ws_).socket();
    beast::error_code ignored;
    socket.set_option(asio::socket_base::linger(true, 0), ignored);
    socket.close(ignored);
  }

 private:
  static std::chrono::steady_clock::time_point steady_deadline(std::chrono::milliseconds d) {
    return std::chrono::steady_clock::now() + d;
  }

  template <class Done>
  void run_until(Done done, std::chrono::steady_clock::time_point deadline) {
    while (!done()) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return;
      if (ioc_.stopped()) ioc_.restart();
      if (ioc_.run_one_for(deadline - now) == 0 && ioc_.stopped() && !done()) {
        // No work is left that could make progress: nothing to wait for.
        return;
      }
    }
  }

  void start_read() {
    reading_ = true;
    ws_.async_read(read_buffer_, [this](beast::error_code ec, std::size_t) {
      reading_ = false;
      if (ec) {
        failed_ = "read: " + ec.message();
        return;
      }
      inbox_.push_back({ws_.got_text(), beast::buffers_to_string(read_buffer_.data())});
      read_buffer_.consume(read_buffer_.size());
    });
  }

  std::expected<void, std::string> send(std::string_view data, bool text, std::chrono::milliseconds timeout) {
    if (writing_) return std::unexpected("send: an earlier write never finished");
    write_buffer_.assign(data);
    ws_.text(text);
    writing_ = true;
    std::optional<beast::error_code> result;
    ws_.async_write(asio::buffer(write_buffer_), [this, &result](beast::error_code ec, std::size_t) {
      writing_ = false;
      result = ec;
    });
    run_until([&] { return result.has_value(); }, steady_deadline(timeout));
    if (!result) return std::unexpected("send: timed out");  // the stream is unusable from here
    if (*result) return std::unexpected("send: " + result->message());
    return {};
  }

  asio::io_context ioc_;
  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer read_buffer_;
  std::string write_buffer_;
  std::deque<ws_frame> inbox_;  // frames read but not yet handed out
  bool reading_ = false, writing_ = false;
  std::optional<std::string> failed_;  // why the connection ended, once it has
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

inline std::expected<server_frame, std::string> parse_server_frame(const std::string& raw) {
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  if (parser.parse(raw).get(obj) != simdjson::SUCCESS) return std::unexpected("frame is not a JSON object: " + raw);
  server_frame f;
  f.raw = raw;
  std::string_view s;
  if (obj["type"].get(s) != simdjson::SUCCESS) return std::unexpected("frame without string 'type': " + raw);
  f.type = s;
  if (obj["id"].get(s) == simdjson::SUCCESS) f.id = std::string(s);
  if (obj["text"].get(s) == simdjson::SUCCESS) f.text = s;
  if (obj["finish_reason"].get(s) == simdjson::SUCCESS) f.finish_reason = s;
  if (obj["code"].get(s) == simdjson::SUCCESS) f.code = s;
  if (obj["message"].get(s) == simdjson::SUCCESS) f.message = s;
  simdjson::dom::array ids;
  if (obj["token_ids"].get(ids) == simdjson::SUCCESS)
    for (auto v : ids) f.token_ids.push_back(std::int64_t(v));
  simdjson::dom::object usage, timings;
  if (obj["usage"].get(usage) == simdjson::SUCCESS) {
    if (usage["prompt_tokens"].get(f.prompt_tokens) != simdjson::SUCCESS) f.prompt_tokens = -1;
    if (usage["completion_tokens"].get(f.completion_tokens) != simdjson::SUCCESS) f.completion_tokens = -1;
  }
  f.has_timings = obj["timings"].get(timings) == simdjson::SUCCESS;
  if (f.has_timings && timings["total_ms"].get(f.total_ms) != simdjson::SUCCESS) f.total_ms = -1;
  return f;
}

// Appends s to out as a JSON string literal (quotes and escapes; UTF-8 passes through).
inline void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (c < 0x20) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\u00";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    } else {
      out.push_back(ch);
    }
  }
  out.push_back('"');
}

// {"type":"generate","id":ID,"prompt":PROMPT,"params":{"max_tokens":N,"temperature":0<extra>}}
// extra_params is raw JSON appended inside params, e.g. R"(,"ignore_eos":true)".
inline std::string generate_frame(std::string_view id, std::string_view prompt, int max_tokens,
                                  std::string_view extra_params = "") {
  std::string out = R"({"type":"generate","id":)";
  append_json_string(out, id);
  out += R"(,"prompt":)";
  append_json_string(out, prompt);
  out += R"(,"params":{"max_tokens":)" + std::to_string(max_tokens) + R"(,"temperature":0)";
  out += extra_params;
  out += "}}";
  return out;
}

inline std::string cancel_frame(std::string_view id) {
  std::string out = R"({"type":"cancel","id":)";
  append_json_string(out, id);
  return out + "}";
}

}  // namespace pagedserve::e2e
