#include "net/ws_session.hpp"

#include <boost/asio/post.hpp>

#include "actors/logger.hpp"

namespace pagedserve::net {
namespace {

// Frames above max_frame_bytes get an error and the socket goes on; only frames this many times
// larger make Beast close the socket (1009), so a hostile client cannot make us buffer without bound.
constexpr std::size_t hard_frame_factor = 4;

}  // namespace

ws_session::ws_session(tcp::socket socket, engine& e, const server_config& config)
    : ws_(std::move(socket)), engine_(e), config_(config) {}

void ws_session::run(http::request<http::string_body> upgrade) {
  // Tokens are small frames sent as they are sampled: Nagle's algorithm would hold them back.
  beast::error_code ec;
  beast::get_lowest_layer(ws_).socket().set_option(tcp::no_delay(true), ec);
  ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
  ws_.set_option(websocket::stream_base::decorator(
      [](websocket::response_type& res) { res.set(http::field::server, "pagedserve/" PAGEDSERVE_VERSION); }));
  ws_.read_message_max(config_.max_frame_bytes * hard_frame_factor);
  ws_.async_accept(upgrade, beast::bind_front_handler(&ws_session::on_accept, shared_from_this()));
}

void ws_session::on_accept(beast::error_code ec) {
  if (ec) {
    actor_logger("net")->debug("websocket accept failed: {}", ec.message());
    return;
  }
  do_read();
}

void ws_session::do_read() {
  ws_.async_read(buffer_, beast::bind_front_handler(&ws_session::on_read, shared_from_this()));
}

void ws_session::on_read(beast::error_code ec, std::size_t bytes) {
  if (ec) {  // closed, reset, timed out or a frame past the hard limit: the client is gone
    actor_logger("net")->debug("websocket closed: {}", ec.message());
    closed_ = true;
    close_requests();
    return;
  }
  if (!ws_.got_text()) {
    enqueue_error(std::nullopt, "binary_frame", "binary frames are not accepted; send JSON text");
  } else if (bytes > config_.max_frame_bytes) {
    enqueue_error(std::nullopt, "frame_too_large",
                               "frame of " + std::to_string(bytes) + " bytes exceeds the limit of " +
                                   std::to_string(config_.max_frame_bytes));
  } else {
    const auto data = buffer_.cdata();
    handle_text({static_cast<const char*>(data.data()), data.size()});
  }
  buffer_.consume(buffer_.size());
  do_read();
}

void ws_session::handle_text(std::string_view text) {
  client_frame frame = parse_client_frame(text);
  if (auto* err = std::get_if<protocol_error>(&frame)) {
    enqueue_error(err->id, err->code, err->message);
    return;
  }
  if (auto* cancel = std::get_if<cancel_command>(&frame)) {
    auto it = requests_.find(cancel->id);
    if (it == requests_.end())
      enqueue_error(cancel->id, "unknown_id", "no request with this id is in flight");
    else
      it->second->tell(cancel_generation{});
    return;
  }
  auto& gen = std::get<generate_command>(frame);
  if (requests_.contains(gen.id)) {
    enqueue_error(gen.id, "duplicate_id", "a request with this id is already in flight");
    return;
  }
  if (static_cast<int>(requests_.size()) >= config_.max_requests_per_socket) {
    enqueue_error(gen.id, "too_many_requests",
                               "at most " + std::to_string(config_.max_requests_per_socket) +
                                   " requests may be in flight on one socket");
    return;
  }
  const std::string client_id = gen.id;
  auto actor = std::make_shared<request_actor>(engine_.executor(), engine_, shared_from_this(), std::move(gen));
  requests_.emplace(client_id, actor);
  actor->tell(start_generation{});
}

void ws_session::send_tokens(const std::string& client_id, token_event event) {
  asio::post(ws_.get_executor(), [self = shared_from_this(), id = client_id, e = std::move(event)]() mutable {
    if (self->closed_) return;
    // A client reading slower than the engine writes gets several tokens per frame: merge into this
    // request's last queued token frame when nothing of it follows and it is not being written.
    for (auto it = self->outbound_.rbegin(); it != self->outbound_.rend(); ++it) {
      if (it->client_id != id) continue;
      const bool in_flight = self->writing_ && std::next(it) == self->outbound_.rend();
      if (it->frame.empty() && !in_flight) {
        token_event& open = it->tokens;
        open.text += e.text;
        open.ids.insert(open.ids.end(), e.ids.begin(), e.ids.end());
        open.logprobs.insert(open.logprobs.end(), e.logprobs.begin(), e.logprobs.end());
        return;
      }
      break;
    }
    self->enqueue({{}, std::move(id), std::move(e)});
  });
}

void ws_session::send_final(const std::string& client_id, final_event event) {
  asio::post(ws_.get_executor(), [self = shared_from_this(), id = client_id, e = std::move(event)]() mutable {
    self->requests_.erase(id);
    self->enqueue({e.reason ? encode_done_frame(id, *e.reason, e.used, e.timings)
                            : encode_error_frame(id, e.error_code, e.error_message),
                   {}, {}});
  });
}

void ws_session::enqueue_error(const std::optional<std::string>& id, std::string_view code, std::string_view message) {
  enqueue({encode_error_frame(id, code, message), {}, {}});
}

void ws_session::enqueue(outbound_frame item) {
  if (closed_) return;
  const auto limit = static_cast<std::size_t>(config_.max_outbound_frames);
  if (item.frame.empty() && outbound_.size() >= limit) {
    // The client stopped reading: end its requests rather than buffer tokens without bound. Their
    // final frames still queue (at most one per request), up to the hard limit below.
    actor_logger("net")->warn("client not reading ({} frames queued): cancelling its requests", outbound_.size());
    close_requests();
    return;
  }
  if (outbound_.size() >= 2 * limit) {  // a client that sends but never reads: drop the connection
    actor_logger("net")->warn("client not reading ({} frames queued): closing the connection", outbound_.size());
    closed_ = true;
    close_requests();
    beast::get_lowest_layer(ws_).close();
    return;
  }
  outbound_.push_back(std::move(item));
  if (!writing_) do_write();
}

void ws_session::do_write() {
  writing_ = true;
  outbound_frame& next = outbound_.front();
  if (next.frame.empty()) next.frame = encode_token_frame(next.client_id, next.tokens);
  ws_.text(true);
  ws_.async_write(asio::buffer(next.frame), beast::bind_front_handler(&ws_session::on_write, shared_from_this()));
}

void ws_session::on_write(beast::error_code ec, std::size_t) {
  writing_ = false;
  if (ec) {
    closed_ = true;
    outbound_.clear();
    close_requests();
    return;
  }
  outbound_.pop_front();
  if (!outbound_.empty()) do_write();
}

void ws_session::close_requests() {
  for (auto& [id, actor] : requests_) actor->tell(cancel_generation{});
}

}  // namespace pagedserve::net
