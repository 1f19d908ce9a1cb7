// The WebSocket target client: a pool of sockets to /v1/ws, each carrying any number of requests
// told apart by id (as the protocol allows). Frames are parsed with simdjson; a request's timing
// is taken from the moment its generate frame is queued on an open socket.
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <simdjson.h>

#include <deque>
#include <unordered_map>

#include "loadgen/client.hpp"
#include "loadgen/json_writer.hpp"

namespace pagedserve::loadgen {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

struct ws_shared {
  const options& opts;
  end_handler on_end;
  tcp::endpoint endpoint;
  std::string host_header;  // host:port for the handshake
};

std::string generate_frame(const request_spec& s, const options& o) {
  json_writer w;
  w.begin_object().field("type", "generate").field("id", s.id).field("prompt", s.prompt);
  w.key("params").begin_object().field("max_tokens", s.max_tokens).field("temperature", o.temperature);
  w.field("seed", static_cast<long long>(o.seed + static_cast<std::uint64_t>(s.index)));
  if (o.ignore_eos) w.field("ignore_eos", true);
  w.end_object().end_object();
  return w.take();
}

class ws_connection : public std::enable_shared_from_this<ws_connection> {
 public:
  enum class state { connecting, open, closed };

  ws_connection(asio::io_context& io, std::shared_ptr<ws_shared> shared) : ws_(io), shared_(std::move(shared)) {}

  void connect(std::function<void(std::string)> opened) {
    opened_ = std::move(opened);
    beast::get_lowest_layer(ws_).expires_after(std::chrono::seconds(10));
    beast::get_lowest_layer(ws_).async_connect(
        shared_->endpoint, [self = shared_from_this()](beast::error_code ec) { self->on_connect(ec); });
  }

  // Queues a frame for rec; it is sent (and rec.sent stamped) once the socket is open.
  void send(request_record& rec, std::string frame) {
    inflight_[rec.id] = &rec;
    if (state_ == state::open) {
      rec.sent = clock_type::now();
      enqueue(std::move(frame));
    } else {
      waiting_.push_back({&rec, std::move(frame)});
    }
  }

  void cancel(request_record& rec) {
    if (state_ != state::open) return;
    json_writer w;
    w.begin_object().field("type", "cancel").field("id", rec.id).end_object();
    enqueue(w.take());
  }

  // Stops tracking rec and asks the server to stop it.
  void forget(request_record& rec) {
    cancel(rec);
    inflight_.erase(rec.id);
    std::erase_if(waiting_, [&](const auto& p) { return p.first == &rec; });
  }

  // Closes the TCP connection abruptly, like a client that vanished.
  void drop() {
    if (state_ == state::closed) return;
    state_ = state::closed;
    beast::error_code ec;
    beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ec);
    beast::get_lowest_layer(ws_).close();
    end_all(request_outcome::disconnected, "disconnected", "loadgen dropped the connection");
  }

  // Ends what is left as failed and closes with a close frame once queued writes are out.
  void close() {
    if (state_ == state::closed) return;
    const bool was_open = state_ == state::open;
    state_ = state::closed;
    end_all(request_outcome::failed, "closed", "loadgen closed the connection");
    if (!was_open) {
      beast::get_lowest_layer(ws_).close();
      return;
    }
    closing_ = true;
    if (!writing_) do_close();
  }

  std::size_t load() const { return inflight_.size(); }
  bool usable() const { return state_ != state::closed; }

 private:
  void on_connect(beast::error_code ec) {
    if (ec) return fail_open("connect", ec.message());
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().set_option(tcp::no_delay(true), ignored);  // our frames go out at once
    beast::get_lowest_layer(ws_).expires_never();
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::client));
    ws_.set_option(websocket::stream_base::decorator(
        [shared = shared_](websocket::request_type& req) {  // not self: the stream owns this
          req.set(beast::http::field::user_agent, "pagedserve-loadgen");
          for (const auto& [name, value] : shared->opts.headers) req.set(name, value);
        }));
    ws_.read_message_max(64 << 20);
    ws_.async_handshake(shared_->host_header, shared_->opts.target.path,
                        [self = shared_from_this()](beast::error_code ec) { self->on_handshake(ec); });
  }

  void on_handshake(beast::error_code ec) {
    if (ec) return fail_open("handshake", ec.message());
    if (state_ == state::closed) {  // closed by loadgen while connecting
      beast::get_lowest_layer(ws_).close();
      return;
    }
    state_ = state::open;
    if (opened_) std::exchange(opened_, nullptr)("");
    for (auto& [rec, frame] : std::exchange(waiting_, {})) {
      rec->sent = clock_type::now();
      enqueue(std::move(frame));
    }
    do_read();
  }

  void fail_open(const char* kind, const std::string& message) {
    const bool was_closed = state_ == state::closed;
    state_ = state::closed;
    if (!was_closed) end_all(request_outcome::failed, kind, message);
    if (opened_) std::exchange(opened_, nullptr)(std::string(kind) + ": " + message);
  }

  void end_all(request_outcome outcome, const char* kind, const std::string& message) {
    auto inflight = std::exchange(inflight_, {});
    waiting_.clear();
    for (auto& [id, rec] : inflight) record_end(*rec, outcome, shared_->on_end, kind, message);
  }

  void enqueue(std::string frame) {
    outbox_.push_back(std::move(frame));
    if (!writing_) do_write();
  }

  void do_write() {
    writing_ = true;
    ws_.text(true);
    ws_.async_write(asio::buffer(outbox_.front()),
                    [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_write(ec); });
  }

  void on_write(beast::error_code ec) {
    writing_ = false;
    outbox_.pop_front();
    if (ec) {
      if (state_ != state::closed) {
        state_ = state::closed;
        end_all(request_outcome::failed, "connection_closed", "write: " + ec.message());
      }
      return;
    }
    if (closing_) {
      if (outbox_.empty()) do_close();
      else do_write();
      return;
    }
    if (!outbox_.empty() && state_ == state::open) do_write();
  }

  void do_close() {
    closing_ = false;
    beast::get_lowest_layer(ws_).expires_after(std::chrono::seconds(2));
    ws_.async_close(websocket::close_code::normal, [self = shared_from_this()](beast::error_code) {
      beast::get_lowest_layer(self->ws_).close();
    });
  }

  void do_read() {
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec) {
      if (state_ != state::closed) {
        state_ = state::closed;
        end_all(request_outcome::failed, "connection_closed", "read: " + ec.message());
      }
      return;
    }
    const auto now = clock_type::now();
    const auto data = buffer_.cdata();
    handle_frame(std::string_view(static_cast<const char*>(data.data()), data.size()), now);
    buffer_.consume(buffer_.size());
    if (state_ == state::open) do_read();
  }

  void handle_frame(std::string_view text, clock_type::time_point now) {
    simdjson::dom::element doc;
    if (parser_.parse(text.data(), text.size()).get(doc)) return end_all(request_outcome::failed, "protocol", "bad JSON frame");
    std::string_view type, id;
    if (doc["type"].get(type)) return end_all(request_outcome::failed, "protocol", "frame without a type");
    if (doc["id"].get(id)) return;  // an error about no request in particular
    const auto it = inflight_.find(std::string(id));
    if (it == inflight_.end()) return;  // a request we stopped tracking (timed out, or a late cancel reply)
    request_record& rec = *it->second;
    if (type == "token") {
      simdjson::dom::array ids;
      std::size_t n_ids = 0;
      if (!doc["token_ids"].get(ids)) n_ids = ids.size();
      std::string_view piece;
      if (doc["text"].get(piece)) piece = {};
      rec.n_token_ids += static_cast<int>(n_ids);
      if (n_ids > 0 || !piece.empty()) rec.content_chunk(now);
      return;
    }
    inflight_.erase(it);
    if (type == "done") {
      std::string_view reason;
      if (!doc["finish_reason"].get(reason)) rec.finish_reason = std::string(reason);
      std::int64_t n = 0;
      if (!doc["usage"]["prompt_tokens"].get(n)) rec.prompt_tokens = static_cast<int>(n);
      if (!doc["usage"]["completion_tokens"].get(n)) rec.output_tokens = static_cast<int>(n);
      if (reason == "cancelled") {
        if (rec.action == request_action::cancel) record_end(rec, request_outcome::cancelled, shared_->on_end);
        else record_end(rec, request_outcome::failed, shared_->on_end, "server_cancelled", "cancelled by the server");
      } else {
        record_end(rec, request_outcome::completed, shared_->on_end);
      }
    } else if (type == "error") {
      std::string_view code = "unknown", message;
      if (doc["code"].get(code)) code = "unknown";
      if (doc["message"].get(message)) message = {};
      record_end(rec, request_outcome::failed, shared_->on_end, "server_error:" + std::string(code), std::string(message));
    } else {
      record_end(rec, request_outcome::failed, shared_->on_end, "protocol", "unknown frame type " + std::string(type));
    }
  }

  websocket::stream<beast::tcp_stream> ws_;
  std::shared_ptr<ws_shared> shared_;
  beast::flat_buffer buffer_;
  simdjson::dom::parser parser_;
  state state_ = state::connecting;
  std::function<void(std::string)> opened_;
  std::deque<std::string> outbox_;  // front is being written while writing_
  bool writing_ = false;
  bool closing_ = false;            // a close frame follows the queued writes
  std::vector<std::pair<request_record*, std::string>> waiting_;  // generate frames before the socket opened
  std::unordered_map<std::string, request_record*> inflight_;     // by request id
};

class ws_client final : public target_client {
 public:
  ws_client(asio::io_context& io, const options& o, end_handler on_end) : io_(io) {
    const tcp::endpoint ep(asio::ip::make_address(o.target.address), o.target.port);
    auto user_end = std::move(on_end);
    shared_ = std::make_shared<ws_shared>(ws_shared{o, nullptr, ep, o.target.host + ":" + std::to_string(o.target.port)});
    shared_->on_end = [this, user_end](request_record& rec) {
      where_.erase(&rec);
      user_end(rec);
    };
  }
  ~ws_client() override {
    close();
    shared_->on_end = [](request_record&) {};  // sockets still draining on the io_context report to no one
  }

  void open(int n, std::function<void(std::string)> ready) override {
    auto left = std::make_shared<int>(n);
    auto first_error = std::make_shared<std::string>();
    for (int i = 0; i < n; ++i) {
      auto c = std::make_shared<ws_connection>(io_, shared_);
      conns_.push_back(c);
      c->connect([left, first_error, ready](std::string error) {
        if (!error.empty() && first_error->empty()) *first_error = error;
        if (--*left == 0) ready(*first_error);
      });
    }
  }

  void start(request_record& rec, const request_spec& spec) override {
    if (conns_.empty()) conns_.push_back(nullptr);
    // Replace dropped sockets, then use the least loaded one.
    for (auto& c : conns_) {
      if (c && c->usable()) continue;
      c = std::make_shared<ws_connection>(io_, shared_);
      c->connect(nullptr);
    }
    auto best = std::min_element(conns_.begin(), conns_.end(),
                                 [](const auto& a, const auto& b) { return a->load() < b->load(); });
    where_[&rec] = *best;
    (*best)->send(rec, generate_frame(spec, shared_->opts));
  }

  void cancel(request_record& rec) override {
    if (auto it = where_.find(&rec); it != where_.end()) it->second->cancel(rec);
  }
  void disconnect(request_record& rec) override {
    if (auto it = where_.find(&rec); it != where_.end()) {
      const auto c = it->second;  // drop() ends its requests, which erases them from where_
      c->drop();
    }
  }
  void abandon(request_record& rec) override {
    if (auto it = where_.find(&rec); it != where_.end()) {
      it->second->forget(rec);
      where_.erase(it);
    }
  }
  void close() override {
    for (auto& c : std::exchange(conns_, {}))
      if (c) c->close();
  }

 private:
  asio::io_context& io_;
  std::shared_ptr<ws_shared> shared_;
  std::vector<std::shared_ptr<ws_connection>> conns_;
  std::unordered_map<const request_record*, std::shared_ptr<ws_connection>> where_;  // in-flight request -> its socket
};

}  // namespace

std::unique_ptr<target_client> ws_client_make(asio::io_context& io, const options& o, end_handler on_end) {
  return std::make_unique<ws_client>(io, o, std::move(on_end));
}

}  // namespace pagedserve::loadgen
