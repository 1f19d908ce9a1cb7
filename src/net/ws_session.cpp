#include "net/ws_session.hpp"

#include <boost/asio/post.hpp>

#include "actors/logger.hpp"

namespace pagedserve::net {
namespace {

// Frames above max_frame_bytes get an error and the socket goes on; only frames this many times
// larger make Beast close the socket (1009), so a hostile client cannot make us buffer without bound.
constexpr std::size_t hard_frame_factor = 4;
// How long our close frame waits for the client's: one that stopped reading is cut off after it.
constexpr auto close_handshake_timeout = std::chrono::seconds(1);

// One request's link: its events go to the session under the client's id for it.
class ws_request_link : public client_link {
 public:
  ws_request_link(std::shared_ptr<ws_session> session, std::string client_id, std::vector<std::string> ignored)
      : session_(std::move(session)), client_id_(std::move(client_id)), ignored_(std::move(ignored)) {}
  void send_tokens(token_event event) override { session_->send_tokens(client_id_, std::move(event)); }
  void send_final(final_event event) override { session_->send_final(client_id_, std::move(event), ignored_); }
  std::uint64_t client_key() const override { return session_->client_key(); }

 private:
  std::shared_ptr<ws_session> session_;
  std::string client_id_;
  std::vector<std::string> ignored_;  // the request's unknown fields, named in its done frame
};

}  // namespace

ws_session::ws_session(tcp::socket socket, engine_api& e, const server_config& config, std::shared_ptr<connection_slot> slot)
    : ws_(std::move(socket)),
      engine_(e),
      config_(config),
      slot_(std::move(slot)),
      idle_timer_(ws_.get_executor()),
      write_timer_(ws_.get_executor()) {}

ws_session::~ws_session() { slot_->registry().unwatch(this); }

void ws_session::run(http::request<http::string_body> upgrade) {
  slot_->registry().watch(shared_from_this());
  // Tokens are small frames sent as they are sampled: Nagle's algorithm would hold them back.
  beast::error_code ec;
  beast::get_lowest_layer(ws_).socket().set_option(tcp::no_delay(true), ec);
  // Beast's idle timeout (300 s) with pings: a live client answers them even while it only listens to a
  // long generation, so only a dead or stalled peer is cut off. Our own idle timer closes idle sockets.
  auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::server);
  timeouts.keep_alive_pings = true;
  ws_.set_option(timeouts);
  bool offered = false;
  for_each_ws_protocol(upgrade[http::field::sec_websocket_protocol],
                       [&](std::string_view p) { offered = offered || p == ws_protocol_name; });
  ws_.set_option(websocket::stream_base::decorator([offered](websocket::response_type& res) {
    res.set(http::field::server, "pagedserve/" PAGEDSERVE_VERSION);
    if (offered) res.set(http::field::sec_websocket_protocol, ws_protocol_name);
  }));
  ws_.read_message_max(config_.max_frame_bytes * hard_frame_factor);
  ws_.async_accept(upgrade, beast::bind_front_handler(&ws_session::on_accept, shared_from_this()));
}

void ws_session::on_accept(beast::error_code ec) {
  if (ec) {
    actor_logger("net")->debug("websocket accept failed: {}", ec.message());
    return;
  }
  arm_idle_timer();
  do_read();
}

void ws_session::arm_idle_timer() {
  // Beast's idle timeout counts incoming bytes (pongs included), not whether requests are in flight:
  // this one closes a socket only when nothing is in flight and the client has sent no frame.
  const auto idle = std::chrono::seconds(config_.idle_timeout_seconds);
  const auto now = std::chrono::steady_clock::now();
  idle_timer_.expires_at(last_activity_ + idle > now ? last_activity_ + idle : now + idle);
  idle_timer_.async_wait([self = shared_from_this(), idle](beast::error_code ec) {
    if (ec || self->closed_) return;
    if (self->requests_.empty() && std::chrono::steady_clock::now() - self->last_activity_ >= idle) {
      actor_logger("net")->debug("websocket idle for {} s: closing", idle.count());
      return self->close_after_writes("idle timeout");
    }
    self->arm_idle_timer();
  });
}

void ws_session::on_drain() {
  asio::post(ws_.get_executor(), [self = shared_from_this()] {
    self->draining_ = true;
    if (self->requests_.empty()) self->close_after_writes("server shutting down");
  });
}

void ws_session::close_after_writes(std::string_view why) {
  if (closed_ || !close_pending_.empty()) return;
  close_pending_ = why;
  if (!writing_ && outbound_.empty()) do_close();
}

void ws_session::do_close() {
  closed_ = true;  // nothing more is queued; the read loop ends when the client's close frame comes
  idle_timer_.cancel();
  websocket::stream_base::timeout t = websocket::stream_base::timeout::suggested(beast::role_type::server);
  t.keep_alive_pings = true;
  t.handshake_timeout = close_handshake_timeout;
  ws_.set_option(t);
  ws_.async_close(websocket::close_reason(websocket::close_code::going_away, close_pending_),
                  [self = shared_from_this()](beast::error_code ec) {
                    if (ec) actor_logger("net")->debug("websocket close: {}", ec.message());
                  });
}

void ws_session::do_read() {
  ws_.async_read(buffer_, beast::bind_front_handler(&ws_session::on_read, shared_from_this()));
}

void ws_session::on_read(beast::error_code ec, std::size_t bytes) {
  if (ec) {  // closed, reset, timed out or a frame past the hard limit: the client is gone
    actor_logger("net")->debug("websocket closed: {}", ec.message());
    closed_ = true;
    idle_timer_.cancel();  // its handler holds the session (and its connection slot)
    write_timer_.cancel();
    close_requests();
    return;
  }
  const auto data = buffer_.cdata();
  handle_frame({ws_.got_text(), bytes, {static_cast<const char*>(data.data()), data.size()}});
  buffer_.consume(buffer_.size());
  last_activity_ = std::chrono::steady_clock::now();
  do_read();
}

void ws_session::handle_frame(const ws_frame_in& frame) {
  const ws_session_view view{[this](const std::string& id) { return requests_.contains(id); }, requests_.size(),
                             draining_};
  ws_action action = ws_dispatch(frame, view, config_, engine_.request_defaults());
  if (auto* err = std::get_if<protocol_error>(&action)) return enqueue_error(err->id, err->code, err->message);
  if (auto* cancel = std::get_if<ws_cancel>(&action)) return requests_.at(cancel->id)->cancel();
  generate_command& gen = std::get<ws_start>(action).command;
  std::string client_id = gen.id;
  auto link = std::make_shared<ws_request_link>(shared_from_this(), client_id, std::move(gen.ignored_fields));
  requests_.emplace(std::move(client_id), engine_.submit(std::move(gen), std::move(link),
                                                         std::chrono::seconds(config_.request_timeout_seconds)));
}

void ws_session::send_tokens(const std::string& client_id, token_event event) {
  asio::post(ws_.get_executor(), [self = shared_from_this(), id = client_id, e = std::move(event)]() mutable {
    if (self->closed_ || self->ending_.contains(id)) return;
    // Completed tool calls follow the text before them, each as its own frame (encoded now, so
    // nothing later merges ahead of it).
    std::vector<tool_call> calls = std::move(e.tool_calls);
    e.tool_calls.clear();
    self->queue_tokens(id, std::move(e));
    for (const tool_call& call : calls) self->enqueue({encode_tool_call_frame(id, call), id, {}});
  });
}

void ws_session::queue_tokens(const std::string& id, token_event e) {
  if (e.text.empty() && e.reasoning.empty() && e.ids.empty()) return;
  // A client reading slower than the engine writes gets several tokens per frame: merge into this
  // request's last queued token frame when nothing of it follows and it is not being written.
  for (auto it = outbound_.rbegin(); it != outbound_.rend(); ++it) {
    if (it->client_id != id) continue;
    const bool in_flight = writing_ && std::next(it) == outbound_.rend();
    if (it->frame.empty() && !in_flight) {
      outbound_bytes_ -= frame_bytes(*it);
      token_event& open = it->tokens;
      open.text += e.text;
      open.reasoning += e.reasoning;
      open.ids.insert(open.ids.end(), e.ids.begin(), e.ids.end());
      open.logprobs.insert(open.logprobs.end(), e.logprobs.begin(), e.logprobs.end());
      outbound_bytes_ += frame_bytes(*it);
      if (outbound_bytes_ > config_.max_outbound_bytes) end_slow_client();
      return;
    }
    break;
  }
  enqueue({{}, id, std::move(e)});
}

void ws_session::send_final(const std::string& client_id, final_event event, const std::vector<std::string>& ignored) {
  asio::post(ws_.get_executor(), [self = shared_from_this(), id = client_id, e = std::move(event), ignored]() mutable {
    self->requests_.erase(id);
    self->ending_.erase(id);
    if (self->requests_.empty()) self->last_activity_ = std::chrono::steady_clock::now();
    self->enqueue({e.reason ? encode_done_frame(id, e, ignored) : encode_error_frame(id, e.error),
                   {}, {}});
    if (self->draining_ && self->requests_.empty()) self->close_after_writes("server shutting down");
  });
}

void ws_session::enqueue_error(const std::optional<std::string>& id, std::string_view code, std::string_view message) {
  enqueue({encode_error_frame(id, code, message), {}, {}});
}

void ws_session::enqueue(outbound_frame item) {
  if (closed_) return;
  const auto limit = static_cast<std::size_t>(config_.max_outbound_frames);
  if (item.frame.empty() && (outbound_.size() >= limit || outbound_bytes_ > config_.max_outbound_bytes)) {
    // The client stopped reading: end its requests rather than buffer tokens without bound. Their
    // final frames still queue (at most one per request), up to the hard limit below.
    end_slow_client();
    return;
  }
  // A client that sends but never reads: drop the connection. Error frames count in bytes too (each is
  // small, its quoted client text clipped, but a client can ask for many).
  if (outbound_.size() >= 2 * limit || outbound_bytes_ + frame_bytes(item) > 2 * config_.max_outbound_bytes) {
    actor_logger("net")->warn("client not reading ({} frames, {} bytes queued): closing the connection",
                              outbound_.size(), outbound_bytes_);
    closed_ = true;
    idle_timer_.cancel();
    write_timer_.cancel();
    close_requests();
    beast::get_lowest_layer(ws_).close();
    return;
  }
  outbound_bytes_ += frame_bytes(item);
  outbound_.push_back(std::move(item));
  if (!writing_) do_write();
}

std::size_t ws_session::frame_bytes(const outbound_frame& f) {
  // An open token frame is not encoded yet: its text, ~8 bytes per id and the envelope.
  if (!f.frame.empty()) return f.frame.size();
  return 64 + f.client_id.size() + f.tokens.text.size() + f.tokens.reasoning.size() + 8 * f.tokens.ids.size() +
         64 * f.tokens.logprobs.size();
}

void ws_session::end_slow_client() {
  actor_logger("net")->warn("client not reading ({} frames, {} bytes queued): ending its {} requests",
                            outbound_.size(), outbound_bytes_, requests_.size());
  // Queued token frames go (all but the one being written); the requests' error frames follow them.
  for (auto it = outbound_.begin() + (writing_ ? 1 : 0); it != outbound_.end();) {
    if (it->client_id.empty()) {
      ++it;
      continue;
    }
    outbound_bytes_ -= frame_bytes(*it);
    it = outbound_.erase(it);
  }
  const engine_failure too_slow{engine_error::client_too_slow,
                                "the client read too slowly: more than " + std::to_string(config_.max_outbound_bytes) +
                                    " bytes or " + std::to_string(config_.max_outbound_frames) +
                                    " frames were waiting to be sent"};
  for (auto& [id, request] : requests_)
    if (ending_.insert(id).second) request->cancel(too_slow);
}

void ws_session::do_write() {
  writing_ = true;
  outbound_frame& next = outbound_.front();
  if (next.frame.empty()) {
    outbound_bytes_ -= frame_bytes(next);
    next.frame = encode_token_frame(next.client_id, next.tokens);
    outbound_bytes_ += frame_bytes(next);
  }
  const std::uint64_t epoch = ++write_epoch_;
  write_timer_.expires_after(std::chrono::seconds(config_.write_timeout_seconds));
  write_timer_.async_wait([self = shared_from_this(), epoch](beast::error_code ec) {
    if (!ec && epoch == self->write_epoch_ && self->writing_ && !self->closed_) self->on_write_timeout();
  });
  ws_.text(true);
  ws_.async_write(asio::buffer(next.frame), beast::bind_front_handler(&ws_session::on_write, shared_from_this()));
}

void ws_session::on_write_timeout() {
  actor_logger("net")->warn("websocket client stopped reading for {} s ({} frames, {} bytes queued): ending its {} "
                            "requests with client_too_slow and closing",
                            config_.write_timeout_seconds, outbound_.size(), outbound_bytes_, requests_.size());
  const engine_failure too_slow{engine_error::client_too_slow,
                                "the client read nothing for " + std::to_string(config_.write_timeout_seconds) + " s"};
  for (auto& [id, request] : requests_)
    if (ending_.insert(id).second) request->cancel(too_slow);
  closed_ = true;
  idle_timer_.cancel();
  beast::get_lowest_layer(ws_).close();  // aborts the blocked write: on_write sees the error
}

void ws_session::on_write(beast::error_code ec, std::size_t) {
  writing_ = false;
  ++write_epoch_;
  write_timer_.cancel();
  if (ec) {
    closed_ = true;
    idle_timer_.cancel();
    outbound_.clear();
    outbound_bytes_ = 0;
    close_requests();
    return;
  }
  outbound_bytes_ -= frame_bytes(outbound_.front());
  outbound_.pop_front();
  if (!outbound_.empty()) return do_write();
  if (!close_pending_.empty()) do_close();
}

void ws_session::close_requests() {
  for (auto& [id, request] : requests_) request->cancel();
}

}  // namespace pagedserve::net
