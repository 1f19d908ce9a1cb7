#include "net/http_session.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "actors/logger.hpp"
#include "net/ws_session.hpp"
#include "pagedserve/ws_protocol.hpp"

namespace pagedserve::net {
namespace {

constexpr auto http_idle_timeout = std::chrono::seconds(30);

std::string error_body(std::string_view message, std::string_view type, std::string_view code) {
  std::string out = R"({"error":{"message":)";
  json_append_string(out, message);
  out += R"(,"type":)";
  json_append_string(out, type);
  out += R"(,"param":null,"code":)";
  json_append_string(out, code);
  out += "}}";
  return out;
}

// Resident set size of this process, from /proc (0 where unavailable).
std::uint64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long pages_total = 0, pages_resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &pages_total, &pages_resident);
  std::fclose(f);
  return n == 2 ? pages_resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

std::string health_body(const engine& e, const engine_status& s) {
  std::string out = R"({"status":"ok","model":)";
  json_append_string(out, e.served_model().name);
  out += R"(,"running":)" + std::to_string(s.scheduler.running) + R"(,"waiting":)" +
         std::to_string(s.scheduler.waiting) + R"(,"kv_blocks_total":)" + std::to_string(s.kv.blocks_total) +
         R"(,"kv_blocks_free":)" + std::to_string(s.kv.blocks_free) + R"(,"kv_block_size":)" +
         std::to_string(s.kv.block_size) + R"(,"kv_sequences":)" + std::to_string(s.kv.sequences) +
         R"(,"preemptions":)" + std::to_string(s.scheduler.preemptions) + R"(,"steps":)" +
         std::to_string(s.scheduler.steps) + R"(,"rss_bytes":)" + std::to_string(resident_bytes()) + R"(,"version":")" PAGEDSERVE_VERSION R"("})";
  return out;
}

}  // namespace

http_session::http_session(tcp::socket socket, engine& e, const server_config& config)
    : stream_(std::move(socket)), engine_(e), config_(config) {}

void http_session::run() {
  asio::dispatch(stream_.get_executor(), beast::bind_front_handler(&http_session::do_read, shared_from_this()));
}

void http_session::do_read() {
  parser_.emplace();
  parser_->body_limit(config_.max_body_bytes);
  parser_->header_limit(16 * 1024);
  stream_.expires_after(http_idle_timeout);
  http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&http_session::on_read, shared_from_this()));
}

void http_session::on_read(beast::error_code ec, std::size_t) {
  if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::connection_reset) {
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    return;
  }
  if (ec == http::error::body_limit) {
    response_ = {};
    send_json(http::status::payload_too_large, error_body("request body too large", "invalid_request_error", "body_too_large"));
    return;
  }
  if (ec) {  // malformed HTTP: answer 400 once, then close
    response_ = {};
    response_.keep_alive(false);
    send_json(http::status::bad_request, error_body("malformed HTTP request: " + ec.message(), "invalid_request_error", "bad_http"));
    return;
  }
  handle_request();
}

void http_session::handle_request() {
  auto& req = parser_->get();
  const std::string_view target = req.target();
  const std::string_view path = target.substr(0, target.find('?'));
  if (websocket::is_upgrade(req)) {
    if (path != "/v1/ws") {
      response_ = {};
      response_.version(req.version());
      send_json(http::status::not_found, error_body("WebSocket endpoint is /v1/ws", "invalid_request_error", "not_found"));
      return;
    }
    stream_.expires_never();
    std::make_shared<ws_session>(stream_.release_socket(), engine_, config_)->run(parser_->release());
    return;
  }
  response_ = {};
  response_.version(req.version());
  response_.keep_alive(req.keep_alive());
  if (path == "/health") {
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
      send_json(http::status::method_not_allowed, error_body("use GET /health", "invalid_request_error", "method_not_allowed"));
      return;
    }
    engine_.report_status([self = shared_from_this()](engine_status s) {
      asio::post(self->stream_.get_executor(), [self, s] {
        self->send_json(http::status::ok, health_body(self->engine_, s));
      });
    });
    return;
  }
  send_json(http::status::not_found, error_body("no route for " + std::string(path), "invalid_request_error", "not_found"));
}

void http_session::send_json(http::status status, std::string body) {
  response_.result(status);
  response_.set(http::field::server, "pagedserve/" PAGEDSERVE_VERSION);
  response_.set(http::field::content_type, "application/json");
  response_.body() = std::move(body);
  response_.prepare_payload();
  const bool keep_alive = response_.keep_alive();
  http::async_write(stream_, response_,
                    beast::bind_front_handler(&http_session::on_write, shared_from_this(), keep_alive));
}

void http_session::on_write(bool keep_alive, beast::error_code ec, std::size_t) {
  if (ec) return;
  if (!keep_alive) {
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    return;
  }
  do_read();
}

}  // namespace pagedserve::net
