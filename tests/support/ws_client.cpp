// The e2e WebSocket client and /v1/ws frame helpers (ws_client.hpp), compiled once into test_support.
#include "support/ws_client.hpp"

#include <simdjson.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>

#include "api/ws_protocol.hpp"
#include "support/sanitizer_env.hpp"

namespace pagedserve::e2e {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

std::chrono::steady_clock::time_point steady_deadline(std::chrono::milliseconds d) {
  return std::chrono::steady_clock::now() + d;
}

}  // namespace

struct ws_client::impl {
  impl() : ws(ioc) {}
  ~impl() {
    beast::error_code ignored;
    beast::get_lowest_layer(ws).socket().close(ignored);
    ioc.restart();
    ioc.poll();  // let aborted handlers run while the members they touch still live
  }

  template <class Done>
  void run_until(Done done, std::chrono::steady_clock::time_point deadline) {
    while (!done()) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return;
      if (ioc.stopped()) ioc.restart();
      if (ioc.run_one_for(deadline - now) == 0 && ioc.stopped() && !done()) {
        // No work is left that could make progress: nothing to wait for.
        return;
      }
    }
  }

  void start_read() {
    reading = true;
    ws.async_read(read_buffer, [this](beast::error_code ec, std::size_t) {
      reading = false;
      if (ec) {
        failed = "read: " + ec.message();
        return;
      }
      inbox.push_back({ws.got_text(), beast::buffers_to_string(read_buffer.data())});
      read_buffer.consume(read_buffer.size());
    });
  }

  std::expected<void, std::string> send(std::string_view data, bool text, std::chrono::milliseconds timeout) {
    if (writing) return std::unexpected("send: an earlier write never finished");
    write_buffer.assign(data);
    ws.text(text);
    writing = true;
    std::optional<beast::error_code> result;
    ws.async_write(asio::buffer(write_buffer), [this, &result](beast::error_code ec, std::size_t) {
      writing = false;
      result = ec;
    });
    run_until([&] { return result.has_value(); }, steady_deadline(timeout));
    if (!result) return std::unexpected("send: timed out");  // the stream is unusable from here
    if (*result) return std::unexpected("send: " + result->message());
    return {};
  }

  asio::io_context ioc;
  websocket::stream<beast::tcp_stream> ws;
  beast::flat_buffer read_buffer;
  std::string write_buffer;
  std::deque<ws_frame> inbox;  // frames read but not yet handed out
  bool reading = false, writing = false;
  std::optional<std::string> failed;  // why the connection ended, once it has
};

ws_client::ws_client() : impl_(std::make_unique<impl>()) {}
ws_client::~ws_client() = default;

std::expected<void, std::string> ws_client::connect(unsigned short port, const std::string& target,
                                                    std::chrono::milliseconds timeout,
                                                    std::vector<std::pair<std::string, std::string>> headers) {
  auto& ws = impl_->ws;
  if (!headers.empty())
    ws.set_option(websocket::stream_base::decorator([headers = std::move(headers)](websocket::request_type& req) {
      for (const auto& [name, value] : headers) req.set(name, value);
    }));
  auto& tcp_layer = beast::get_lowest_layer(ws);
  timeout = test::scaled(timeout);
  tcp_layer.expires_after(timeout);
  std::optional<beast::error_code> result;
  tcp_layer.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), [&](beast::error_code ec) {
    if (ec) {
      result = ec;
      return;
    }
    ws.async_handshake("127.0.0.1:" + std::to_string(port), target, [&](beast::error_code ec) { result = ec; });
  });
  impl_->run_until([&] { return result.has_value(); }, steady_deadline(timeout + std::chrono::seconds(1)));
  // From here on deadlines are ours: a tcp_stream expiry would kill a read we mean to resume.
  tcp_layer.expires_never();
  beast::error_code ignored;  // send each frame at once, as a streaming client would
  tcp_layer.socket().set_option(tcp::no_delay(true), ignored);
  if (!result) return std::unexpected("connect: timed out");
  if (*result) return std::unexpected("connect: " + result->message());
  return {};
}

std::expected<void, std::string> ws_client::send_text(std::string_view data, std::chrono::milliseconds timeout) {
  return impl_->send(data, true, timeout);
}

std::expected<void, std::string> ws_client::send_binary(std::string_view data, std::chrono::milliseconds timeout) {
  return impl_->send(data, false, timeout);
}

std::expected<ws_frame, std::string> ws_client::read(std::chrono::milliseconds timeout) {
  impl& s = *impl_;
  if (s.inbox.empty() && !s.reading && !s.failed) s.start_read();
  s.run_until([&] { return !s.inbox.empty() || s.failed; }, steady_deadline(timeout));
  if (!s.inbox.empty()) {
    ws_frame f = std::move(s.inbox.front());
    s.inbox.pop_front();
    return f;
  }
  if (s.failed) return std::unexpected(*s.failed);
  return std::unexpected("timeout");
}

void ws_client::close(std::chrono::milliseconds timeout) {
  std::optional<beast::error_code> result;
  impl_->ws.async_close(websocket::close_code::normal, [&](beast::error_code ec) { result = ec; });
  impl_->run_until([&] { return result.has_value(); }, steady_deadline(test::scaled(timeout)));
}

void ws_client::shrink_receive_buffer(int bytes) {
  auto& socket = beast::get_lowest_layer(impl_->ws).socket();
  beast::error_code ignored;
  socket.open(tcp::v4(), ignored);
  socket.set_option(asio::socket_base::receive_buffer_size(bytes), ignored);
}

void ws_client::abort() {
  auto& socket = beast::get_lowest_layer(impl_->ws).socket();
  beast::error_code ignored;
  socket.set_option(asio::socket_base::linger(true, 0), ignored);
  socket.close(ignored);
}

std::expected<server_frame, std::string> parse_server_frame(const std::string& raw) {
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

std::string generate_frame(std::string_view id, std::string_view prompt, int max_tokens,
                           std::string_view extra_params) {
  std::string out = R"({"type":"generate","id":)";
  json_append_string(out, id);
  out += R"(,"prompt":)";
  json_append_string(out, prompt);
  out += R"(,"params":{"max_tokens":)" + std::to_string(max_tokens) + R"(,"temperature":0)";
  out += extra_params;
  out += "}}";
  return out;
}

std::string cancel_frame(std::string_view id) {
  std::string out = R"({"type":"cancel","id":)";
  json_append_string(out, id);
  return out + "}";
}

}  // namespace pagedserve::e2e
