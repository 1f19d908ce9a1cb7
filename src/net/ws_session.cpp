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
    enqueue(encode_error_frame(std::nullopt, "binary_frame", "binary frames are not accepted; send JSON text"));
  } else if (bytes > config_.max_frame_bytes) {
    enqueue(encode_error_frame(std::nullopt, "frame_too_large",
                               "frame of " + std::to_string(bytes) + " bytes exceeds the limit of " +
                                   std::to_string(config_.max_frame_bytes)));
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
    enqueue(encode_error_frame(err->id, err->code, err->message));
    return;
  }
  if (auto* cancel = std::get_if<cancel_command>(&frame)) {
    auto it = requests_.find(cancel->id);
    if (it == requests_.end())
      enqueue(encode_error_frame(cancel->id, "unknown_id", "no request with this id is in flight"));
    else
      it->second->tell(cancel_generation{});
    return;
  }
  auto& gen = std::get<generate_command>(frame);
  if (requests_.contains(gen.id)) {
    enqueue(encode_error_frame(gen.id, "duplicate_id", "a request with this id is already in flight"));
    return;
  }
  if (static_cast<int>(requests_.size()) >= config_.max_requests_per_socket) {
    enqueue(encode_error_frame(gen.id, "too_many_requests",
                               "at most " + std::to_string(config_.max_requests_per_socket) +
                                   " requests may be in flight on one socket"));
    return;
  }
  const std::string client_id = gen.id;
  auto actor = std::make_shared<request_actor>(engine_.executor(), engine_, shared_from_this(), std::move(gen));
  requests_.emplace(client_id, actor);
  actor->tell(start_generation{});
}

void ws_session::send_frame(std::string frame) {
  asio::post(ws_.get_executor(), [self = shared_from_this(), f = std::move(frame)]() mutable {
    self->enqueue(std::move(f));
  });
}

void ws_session::request_ended(const std::string& client_id) {
  asio::post(ws_.get_executor(), [self = shared_from_this(), id = client_id] { self->requests_.erase(id); });
}

void ws_session::enqueue(std::string frame) {
  if (closed_) return;
  if (static_cast<int>(outbound_.size()) >= config_.max_outbound_frames) {
    // The client stopped reading: end its requests rather than buffer without bound.
    actor_logger("net")->warn("client not reading ({} frames queued): cancelling its requests", outbound_.size());
    close_requests();
    return;
  }
  outbound_.push_back(std::move(frame));
  if (!writing_) do_write();
}

void ws_session::do_write() {
  writing_ = true;
  ws_.text(true);
  ws_.async_write(asio::buffer(outbound_.front()), beast::bind_front_handler(&ws_session::on_write, shared_from_this()));
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
