// The connection mechanics of http_session: the read loop with pipelining, the in-order answer
// queue, the write queue, timeouts, close and the WebSocket hand-over. Routes are http_api's.
#include "net/http_session.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <boost/asio/write.hpp>

#include "actors/logger.hpp"
#include "net/http_api.hpp"
#include "net/request_limits.hpp"
#include "net/ws_session.hpp"
#include "api/openai_response.hpp"

namespace pagedserve::net {
namespace {

constexpr auto linger_timeout = std::chrono::seconds(2);  // to read what a client still sends after our FIN
constexpr std::size_t max_pipelined = 16;                  // requests read ahead of the one being answered

bool is_disconnect(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == http::error::partial_message || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
         ec == asio::error::broken_pipe || ec == asio::error::bad_descriptor || ec == asio::error::not_connected;
}

}  // namespace

http_session::http_session(tcp::socket socket, std::shared_ptr<const http_api> api, const server_config& config,
                           std::shared_ptr<connection_slot> slot)
    : socket_(std::move(socket)),
      executor_(socket_.get_executor()),
      api_(std::move(api)),
      config_(config),
      slot_(std::move(slot)),
      idle_timer_(executor_),
      write_timer_(executor_),
      out_(config.max_outbound_bytes, static_cast<std::size_t>(config.max_outbound_frames)) {}

http_session::~http_session() {
  if (slot_) slot_->registry().unwatch(this);
}

void http_session::run() {
  slot_->registry().watch(shared_from_this());
  asio::dispatch(executor_, [self = shared_from_this()] {
    // SSE events are small writes sent as they are made: Nagle's algorithm would hold them back.
    beast::error_code ec;
    self->socket_.set_option(tcp::no_delay(true), ec);
    self->arm_idle_timer();
    self->do_read();
  });
}

void http_session::do_read() {
  if (reading_ || read_stopped_ || closed_ || pending_.size() >= max_pipelined) return;
  if (!out_.accepting()) {  // the client is not reading its answers: stop reading its requests
    paused_ = true;
    return;
  }
  parser_.emplace();
  limit_request_parser(*parser_, config_);
  reading_ = true;
  http::async_read_header(socket_, buffer_, *parser_, beast::bind_front_handler(&http_session::on_header, shared_from_this()));
}

void http_session::on_header(beast::error_code ec, std::size_t) {
  if (closing_ || closed_) {  // the connection is closing: whatever comes now is dropped
    reading_ = false;
    return ec ? close_now() : drain();
  }
  if (ec) return on_read_error(ec);
  // A declared body over the limit gets its 413 without being read.
  if (declared_body_too_large(*parser_, config_)) return on_read_error(http::error::body_limit);
  // curl waits a second for "100 Continue" before sending a larger body; say it when nothing else is
  // being written, so it can never land inside another response.
  const auto& req = parser_->get();
  if (beast::iequals(req[http::field::expect], "100-continue") && !active_ && pending_.empty() && !sending())
    send("HTTP/1.1 100 Continue\r\n\r\n");
  http::async_read(socket_, buffer_, *parser_, beast::bind_front_handler(&http_session::on_body, shared_from_this()));
}

void http_session::on_body(beast::error_code ec, std::size_t) {
  if (closing_ || closed_) {
    reading_ = false;
    return ec ? close_now() : drain();
  }
  if (ec) return on_read_error(ec);
  reading_ = false;
  request req = parser_->release();
  // A WebSocket client sends frames once it has the 101: nothing more to read here.
  if (websocket::is_upgrade(req)) read_stopped_ = true;
  pending_.push_back({std::move(req), std::nullopt});
  ++idle_epoch_;
  idle_timer_.cancel();
  if (!active_) start_next();
  do_read();
}

void http_session::on_read_error(beast::error_code ec) {
  reading_ = false;
  read_stopped_ = true;
  std::optional<openai::api_error> answer;
  if (ec == http::error::body_limit)
    answer = openai::api_error{413, "request body exceeds " + std::to_string(config_.max_body_bytes) + " bytes",
                               "invalid_request_error", "", "body_too_large"};
  else if (ec == http::error::header_limit)
    answer = openai::api_error{431, "request header exceeds " + std::to_string(config_.max_header_bytes) + " bytes",
                               "invalid_request_error", "", "header_too_large"};
  else if (ec.category() == beast::error_code(http::error::end_of_stream).category() && !is_disconnect(ec))
    answer = openai::api_error{400, "malformed HTTP request: " + ec.message(), "invalid_request_error", "", "bad_http"};
  if (answer) {  // answered in turn, after what was read before it; then the connection closes
    pending_.push_back({std::nullopt, std::move(answer)});
    if (!active_) start_next();
    return;
  }
  // A clean end of stream between requests is a half-close (shutdown of the client's writing side,
  // as `curl` piping a body or HTTP/1.0 clients do): what it asked for is still answered, then the
  // connection closes. Were the client wholly gone, the first write fails and cancels it.
  if ((ec == http::error::end_of_stream || ec == asio::error::eof) && buffer_.size() == 0) {
    actor_logger("net")->debug("http client half-closed: answering what it asked, then closing");
    if (!active_) start_next();
    return;
  }
  // The client closed mid-request, reset or timed out: cancel what it asked for and answer nothing more.
  actor_logger("net")->debug("http connection ended: {}", ec.message());
  peer_closed_ = true;
  pending_.clear();
  if (auto x = exchange_) x->on_client_gone();
  if (!active_) close_after_writes();
}

void http_session::start_next() {
  if (active_ || closed_) return;
  if (pending_.empty()) {
    if (read_stopped_ || peer_closed_ || closing_ || draining_) close_after_writes();
    else arm_idle_timer();
    return;
  }
  if (!out_.accepting()) {  // answered again once the queue drains (on_write)
    paused_ = true;
    return;
  }
  pending_item item = std::move(pending_.front());
  pending_.pop_front();
  active_ = true;
  cors_origin_.clear();
  head_only_ = false;
  if (item.read_error) {
    keep_alive_ = false;
    version_ = 11;
    return respond_error(*item.read_error);
  }
  request& req = *item.req;
  keep_alive_ = req.keep_alive();
  version_ = req.version();
  head_only_ = req.method() == http::verb::head;
  api_->handle(shared_from_this(), std::move(req));
}

std::string http_session::head(http::status status, std::string_view content_type,
                               std::optional<std::size_t> content_length, const header_list& extra) const {
  std::string out = "HTTP/1.1 " + std::to_string(static_cast<unsigned>(status)) + " " +
                    std::string(http::obsolete_reason(status)) + "\r\nServer: pagedserve/" PAGEDSERVE_VERSION "\r\n";
  if (!content_type.empty()) out += "Content-Type: " + std::string(content_type) + "\r\n";
  const bool bodiless = status == http::status::no_content || status == http::status::not_modified;
  if (content_length && !bodiless) out += "Content-Length: " + std::to_string(*content_length) + "\r\n";
  else if (!bodiless && chunked()) out += "Transfer-Encoding: chunked\r\n";
  // Without a length or chunking the body ends with the connection.
  const bool persistent = keep_alive_ && (bodiless || content_length || chunked());
  out += persistent ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  if (!cors_origin_.empty()) {
    out += "Access-Control-Allow-Origin: " + cors_origin_ + "\r\n";
    if (cors_origin_ != "*") out += "Vary: Origin\r\n";
  }
  for (const auto& [name, value] : extra) out += name + ": " + value + "\r\n";
  out += "\r\n";
  return out;
}

void http_session::send(std::string bytes) {
  if (closed_ || bytes.empty()) return;
  out_.push(std::move(bytes));
  if (!writing_) do_write();
}

void http_session::do_write() {
  writing_ = true;
  const std::vector<std::string>& pieces = out_.start_write();
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(pieces.size());
  for (const std::string& s : pieces) buffers.push_back(asio::buffer(s));
  const std::uint64_t epoch = ++write_epoch_;
  write_timer_.expires_after(std::chrono::seconds(config_.write_timeout_seconds));
  write_timer_.async_wait([self = shared_from_this(), epoch](beast::error_code ec) {
    if (ec || epoch != self->write_epoch_ || !self->writing_) return;
    actor_logger("net")->warn("http client stopped reading for {} s ({} bytes queued): closing",
                              self->config_.write_timeout_seconds, self->out_.bytes());
    self->close_now();
  });
  asio::async_write(socket_, buffers, beast::bind_front_handler(&http_session::on_write, shared_from_this()));
}

void http_session::on_write(beast::error_code ec, std::size_t) {
  writing_ = false;
  ++write_epoch_;
  write_timer_.cancel();
  out_.finish_write();
  if (ec) {
    actor_logger("net")->debug("http write failed: {}", ec.message());
    peer_closed_ = true;
    pending_.clear();
    if (auto x = exchange_) x->on_client_gone();
    close_now();
    return;
  }
  if (out_.has_queued()) return do_write();
  if (upgrade_) return upgrade(*std::exchange(upgrade_, std::nullopt), *upgrade_engine_);
  if (closing_) return close_after_writes();
  if (std::exchange(paused_, false)) {  // drained: answer and read again
    if (!active_) start_next();
    do_read();
  }
  if (auto x = exchange_) x->on_writable();
}

void http_session::finish_response() {
  active_ = false;
  exchange_.reset();
  if (!keep_alive_ || peer_closed_) {
    read_stopped_ = true;
    pending_.clear();
    return close_after_writes();
  }
  start_next();
  do_read();
}

void http_session::arm_idle_timer() {
  // Nothing in progress: the client has this long to send a whole request (half-open and silent
  // connections end here).
  const std::uint64_t epoch = ++idle_epoch_;
  idle_timer_.expires_after(std::chrono::seconds(config_.idle_timeout_seconds));
  idle_timer_.async_wait([self = shared_from_this(), epoch](beast::error_code ec) {
    if (ec || epoch != self->idle_epoch_ || self->active_ || !self->pending_.empty()) return;
    actor_logger("net")->debug("http connection idle for {} s: closing", self->config_.idle_timeout_seconds);
    self->close_now();
  });
}

void http_session::on_drain() {
  asio::post(executor_, [self = shared_from_this()] {
    self->draining_ = true;
    // Requests already read are answered (new generations with 503); start_next closes after the last.
    if (self->closed_ || self->active_ || !self->pending_.empty()) return;
    self->read_stopped_ = true;
    self->close_after_writes();
  });
}

void http_session::close_after_writes() {
  closing_ = true;
  if (closed_ || shut_down_ || sending()) return;  // on_write comes back here once the queue is out
  shut_down_ = true;
  beast::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  if (peer_closed_ || ec) return close_now();
  // Lingering close: closing with unread input (the rest of a refused body, a pipelined request)
  // would make the kernel send a reset that can destroy the response still in flight. Read and drop
  // until the client closes too, for a few seconds at most.
  const std::uint64_t epoch = ++idle_epoch_;
  idle_timer_.expires_after(linger_timeout);
  idle_timer_.async_wait([self = shared_from_this(), epoch](beast::error_code ec) {
    if (!ec && epoch == self->idle_epoch_) self->close_now();
  });
  if (!reading_) drain();  // else the read in flight comes to drain() when it completes
}

void http_session::drain() {
  if (closed_) return;
  reading_ = true;
  socket_.async_read_some(asio::buffer(drain_buf_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
    self->reading_ = false;
    if (ec) return self->close_now();
    self->drain();
  });
}

void http_session::close_now() {
  if (closed_) return;
  closed_ = true;
  ++idle_epoch_;
  ++write_epoch_;
  idle_timer_.cancel();
  write_timer_.cancel();
  out_.drop_queued();
  beast::error_code ec;
  socket_.close(ec);  // aborts a pending read or write; their handlers see operation_aborted
}

void http_session::upgrade(request req, engine_api& e) {
  if (sending()) {  // an earlier response is still going out
    upgrade_ = std::move(req);
    upgrade_engine_ = &e;
    return;
  }
  closed_ = true;
  ++idle_epoch_;
  idle_timer_.cancel();
  write_timer_.cancel();
  slot_->registry().unwatch(this);  // the WebSocket session watches for the drain from here on
  std::make_shared<ws_session>(std::move(socket_), e, config_, std::move(slot_))->run(std::move(req));
}

void http_session::respond(http::status status, std::string_view content_type, std::string body,
                           const header_list& extra) {
  std::string bytes = head(status, content_type, body.size(), extra);
  if (!head_only_) bytes += body;
  send(std::move(bytes));
  finish_response();
}

void http_session::respond_error(const openai::api_error& e) {
  header_list extra;
  if (e.status == 429 || e.status == 503) extra.emplace_back("Retry-After", "1");
  respond(static_cast<http::status>(e.status), "application/json", openai::encode_error(e), extra);
}

std::vector<std::string> http_session::fields_to_warn(const std::vector<std::string>& ignored) {
  constexpr std::size_t max_warned = 64;
  std::vector<std::string> fresh;
  for (const std::string& name : ignored) {
    if (warned_fields_.size() >= max_warned) break;
    if (std::find(warned_fields_.begin(), warned_fields_.end(), name) != warned_fields_.end()) continue;
    warned_fields_.push_back(name);
    fresh.push_back(name);
  }
  return fresh;
}

}  // namespace pagedserve::net
