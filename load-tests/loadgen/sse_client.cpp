// The OpenAI target client: one streaming POST /v1/completions per request, on its own
// connection, read as server-sent events. Timing follows vllm bench serve's
// async_request_openai_completions: every chunk with choices is a content chunk; usage comes
// from the final chunk (stream_options.include_usage); "data: [DONE]" ends the stream.
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <simdjson.h>

#include <array>
#include <unordered_map>

#include "loadgen/client.hpp"
#include "loadgen/json_writer.hpp"
#include "loadgen/sse_parser.hpp"

namespace pagedserve::loadgen {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct sse_shared {
  const options& opts;
  end_handler on_end;
  tcp::endpoint endpoint;
};

std::string completion_body(const request_spec& s, const options& o) {
  json_writer w;
  w.begin_object().field("model", o.model_name).field("prompt", s.prompt).field("max_tokens", s.max_tokens);
  w.field("stream", true).field("temperature", o.temperature);
  w.field("seed", static_cast<long long>(o.seed + static_cast<std::uint64_t>(s.index)));
  if (o.ignore_eos) w.field("ignore_eos", true);
  w.key("stream_options").begin_object().field("include_usage", true).end_object();
  w.end_object();
  std::string body = w.take();
  // --extra-body members go before the closing brace.
  const std::string_view extra = std::string_view(o.extra_body).substr(0, o.extra_body.empty() ? 0 : o.extra_body.size() - 1);
  if (extra.size() > 1 && extra.find_first_not_of(" \t\n", 1) != std::string_view::npos) {
    body.pop_back();
    body += ",";
    body += extra.substr(1);
    body += "}";
  }
  return body;
}

class sse_request : public std::enable_shared_from_this<sse_request> {
 public:
  sse_request(asio::io_context& io, std::shared_ptr<sse_shared> shared, request_record& rec, const request_spec& spec)
      : stream_(io), shared_(std::move(shared)), rec_(&rec) {
    const auto& t = shared_->opts.target;
    req_.method(http::verb::post);
    req_.target(t.path);
    req_.version(11);
    req_.set(http::field::host, t.host + ":" + std::to_string(t.port));
    req_.set(http::field::user_agent, "pagedserve-loadgen");
    req_.set(http::field::content_type, "application/json");
    req_.set(http::field::accept, "text/event-stream");
    for (const auto& [name, value] : shared_->opts.headers) req_.set(name, value);
    req_.keep_alive(false);
    req_.body() = completion_body(spec, shared_->opts);
    req_.prepare_payload();
  }

  void run() {
    rec_->sent = clock_type::now();
    stream_.expires_after(std::chrono::seconds(10));
    stream_.async_connect(shared_->endpoint, [self = shared_from_this()](beast::error_code ec) { self->on_connect(ec); });
  }

  // Closes the connection and ends the request with outcome (unless it already ended).
  void stop(request_outcome outcome, const char* kind, const char* message) {
    end(outcome, kind, message);
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }
  // Closes the connection; the request is no longer reported.
  void forget() {
    rec_ = nullptr;
    stream_.close();
  }

 private:
  void end(request_outcome outcome, std::string kind = {}, std::string message = {}) {
    if (!rec_) return;
    request_record& rec = *std::exchange(rec_, nullptr);
    record_end(rec, outcome, shared_->on_end, std::move(kind), std::move(message));
  }

  void on_connect(beast::error_code ec) {
    if (!rec_) return;
    if (ec) return end(request_outcome::failed, "connect", ec.message());
    beast::error_code ignored;
    stream_.socket().set_option(tcp::no_delay(true), ignored);
    stream_.expires_never();
    http::async_write(stream_, req_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->on_write(ec);
    });
  }

  void on_write(beast::error_code ec) {
    if (!rec_) return;
    if (ec) return end(request_outcome::failed, "connection_closed", "write: " + ec.message());
    parser_.emplace();
    parser_->body_limit(boost::none);
    http::async_read_header(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->on_header(ec);
    });
  }

  void on_header(beast::error_code ec) {
    if (!rec_) return;
    if (ec) return end(request_outcome::failed, "connection_closed", "reading the response header: " + ec.message());
    status_ = parser_->get().result_int();
    do_read_body();
  }

  void do_read_body() {
    if (parser_->is_done()) return on_stream_end();
    parser_->get().body().data = body_buf_.data();
    parser_->get().body().size = body_buf_.size();
    http::async_read_some(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->on_body(ec);
    });
  }

  void on_body(beast::error_code ec) {
    if (!rec_) return;
    if (ec == http::error::need_buffer) ec = {};
    const auto now = clock_type::now();
    const std::size_t n = body_buf_.size() - parser_->get().body().size;
    const std::string_view bytes(body_buf_.data(), n);
    if (status_ != 200) {
      if (error_body_.size() < 4096) error_body_.append(bytes.substr(0, 4096 - error_body_.size()));
    } else {
      events_.feed(bytes, [&](std::string_view data) { on_event(data, now); });
    }
    if (!rec_) return;  // the stream said it was done
    if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == asio::error::eof)
      return on_stream_end();
    if (ec) return end(request_outcome::failed, "connection_closed", "reading the stream: " + ec.message());
    do_read_body();
  }

  void on_stream_end() {
    if (!rec_) return;
    if (status_ != 200)
      return end(request_outcome::failed, "http_" + std::to_string(status_), error_body_);
    const auto now = clock_type::now();
    events_.finish([&](std::string_view data) { on_event(data, now); });
    if (!rec_) return;
    // No [DONE]: accept a stream that carried content, like vllm does; an empty one is an error.
    if (rec_->n_chunks > 0) end(request_outcome::completed);
    else end(request_outcome::failed, "incomplete_stream", "the stream ended without content or [DONE]");
    stream_.close();
  }

  void on_event(std::string_view data, clock_type::time_point now) {
    if (!rec_) return;
    if (data == "[DONE]") {
      end(request_outcome::completed);
      stream_.close();
      return;
    }
    simdjson::dom::element doc;
    if (json_.parse(data.data(), data.size()).get(doc)) return end(request_outcome::failed, "protocol", "bad JSON chunk");
    simdjson::dom::element error;
    if (!doc["error"].get(error)) {
      std::string_view code = "unknown", message;
      if (error.is_object()) {
        if (error["type"].get(code)) code = "unknown";
        if (error["message"].get(message)) message = {};
      }
      end(request_outcome::failed, "server_error:" + std::string(code), std::string(message));
      stream_.close();
      return;
    }
    simdjson::dom::array choices;
    if (!doc["choices"].get(choices) && choices.size() > 0) {
      rec_->content_chunk(now);
      std::string_view reason;
      if (!choices.at(0)["finish_reason"].get(reason)) rec_->finish_reason = std::string(reason);
    }
    simdjson::dom::object usage;
    if (!doc["usage"].get(usage)) {
      std::int64_t v = 0;
      if (!usage["prompt_tokens"].get(v)) rec_->prompt_tokens = static_cast<int>(v);
      if (!usage["completion_tokens"].get(v)) rec_->output_tokens = static_cast<int>(v);
    }
  }

  beast::tcp_stream stream_;
  std::shared_ptr<sse_shared> shared_;
  request_record* rec_;  // null once the request ended or was forgotten
  http::request<http::string_body> req_;
  beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::buffer_body>> parser_;
  std::array<char, 16384> body_buf_{};
  unsigned status_ = 0;
  std::string error_body_;  // first bytes of a non-200 response
  sse_parser events_;
  simdjson::dom::parser json_;
};

class sse_client final : public target_client {
 public:
  sse_client(asio::io_context& io, const options& o, end_handler on_end) : io_(io) {
    const tcp::endpoint ep(asio::ip::make_address(o.target.address), o.target.port);
    auto user_end = std::move(on_end);
    shared_ = std::make_shared<sse_shared>(sse_shared{o, nullptr, ep});
    shared_->on_end = [this, user_end](request_record& rec) {
      active_.erase(&rec);
      user_end(rec);
    };
  }
  ~sse_client() override {
    close();
    shared_->on_end = [](request_record&) {};
  }

  void open(int, std::function<void(std::string)> ready) override { ready(""); }
  void start(request_record& rec, const request_spec& spec) override {
    auto r = std::make_shared<sse_request>(io_, shared_, rec, spec);
    active_[&rec] = r;
    r->run();
  }
  void cancel(request_record& rec) override { stop(rec, request_outcome::cancelled, "cancelled"); }
  void disconnect(request_record& rec) override { stop(rec, request_outcome::disconnected, "disconnected"); }
  void abandon(request_record& rec) override {
    if (auto it = active_.find(&rec); it != active_.end()) {
      it->second->forget();
      active_.erase(it);
    }
  }
  void close() override {
    for (auto& [rec, r] : std::exchange(active_, {})) r->stop(request_outcome::failed, "closed", "loadgen closed the connection");
  }

 private:
  void stop(request_record& rec, request_outcome outcome, const char* kind) {
    if (auto it = active_.find(&rec); it != active_.end()) {
      const auto r = it->second;  // stop() ends the request, which erases it from active_
      r->stop(outcome, kind, "loadgen closed the connection");
    }
  }

  asio::io_context& io_;
  std::shared_ptr<sse_shared> shared_;
  std::unordered_map<const request_record*, std::shared_ptr<sse_request>> active_;
};

}  // namespace

std::unique_ptr<target_client> sse_client_make(asio::io_context& io, const options& o, end_handler on_end) {
  return std::make_unique<sse_client>(io, o, std::move(on_end));
}

}  // namespace pagedserve::loadgen
