#pragma once
// A tiny OpenAI-style streaming /v1/completions server inside the test process (blocking Beast,
// a thread per connection), so loadgen's SSE client is tested before pagedserve has that endpoint.
// It streams max_tokens chunks of one token each, in the shapes real servers use: CRLF and LF line
// ends, a ": ping" comment, an event split across two HTTP chunks, a usage chunk with empty
// choices, then "data: [DONE]". The model name "fail503" gets an HTTP 503 error object instead.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <simdjson.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pagedserve::loadgen::test {

class fake_sse_server {
 public:
  fake_sse_server() : acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { accept_loop(); });
  }
  ~fake_sse_server() {
    stopping_ = true;
    boost::system::error_code ec;
    // Wake the blocking accept with a connection of our own, then join everything.
    boost::asio::ip::tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ec);
    accept_thread_.join();
    for (auto& t : workers_) t.join();
  }

  unsigned short port() const { return port_; }
  int requests() const { return n_requests_; }
  std::vector<std::string> bodies() const {
    std::lock_guard lock(mu_);
    return bodies_;
  }

 private:
  void accept_loop() {
    while (!stopping_) {
      boost::system::error_code ec;
      boost::asio::ip::tcp::socket s(io_);
      acceptor_.accept(s, ec);
      if (ec || stopping_) break;
      workers_.emplace_back([this, s = std::move(s)]() mutable { serve(std::move(s)); });
    }
  }

  void serve(boost::asio::ip::tcp::socket s) {
    namespace http = boost::beast::http;
    boost::system::error_code ec;
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> req;
    http::read(s, buffer, req, ec);
    if (ec) return;
    ++n_requests_;
    {
      std::lock_guard lock(mu_);
      bodies_.push_back(req.body());
    }
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    std::int64_t max_tokens = 1;
    std::string_view model, prompt;
    if (parser.parse(req.body()).get(doc) || doc["max_tokens"].get(max_tokens) || doc["model"].get(model) ||
        doc["prompt"].get(prompt)) {
      respond(s, http::status::bad_request, R"({"error":{"message":"bad body","type":"invalid_request_error"}})");
      return;
    }
    if (req.target() != "/v1/completions") {
      respond(s, http::status::not_found, R"({"error":{"message":"no route","type":"invalid_request_error"}})");
      return;
    }
    if (model == "fail503") {
      respond(s, http::status::service_unavailable, R"({"error":{"message":"overloaded","type":"unavailable"}})");
      return;
    }
    const auto prompt_words = std::count(prompt.begin(), prompt.end(), ' ') + 1;
    http::response<http::empty_body> res{http::status::ok, 11};
    res.set(http::field::content_type, "text/event-stream");
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    http::write_header(s, sr, ec);
    const auto chunk = [&](std::string_view data) {
      if (!ec) boost::asio::write(s, http::make_chunk(boost::asio::buffer(data)), ec);
    };
    chunk(": ping\n\n");
    for (std::int64_t i = 0; i < max_tokens && !ec; ++i) {
      const bool last = i + 1 == max_tokens;
      const std::string event = std::string("data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":") +
                                "[{\"index\":0,\"text\":\" w" + std::to_string(i) + "\",\"finish_reason\":" +
                                (last ? "\"length\"" : "null") + "}],\"usage\":null}" + (i % 2 ? "\r\n\r\n" : "\n\n");
      if (i == 1) {  // one event in two HTTP chunks
        chunk(std::string_view(event).substr(0, 20));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        chunk(std::string_view(event).substr(20));
      } else {
        chunk(event);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    chunk("data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[],\"usage\":{\"prompt_tokens\":" +
          std::to_string(prompt_words) + ",\"completion_tokens\":" + std::to_string(max_tokens) +
          ",\"total_tokens\":" + std::to_string(prompt_words + max_tokens) + "}}\n\n");
    chunk("data: [DONE]\n\n");
    if (!ec) boost::asio::write(s, http::make_chunk_last(), ec);
    s.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
  }

  static void respond(boost::asio::ip::tcp::socket& s, boost::beast::http::status status, std::string body) {
    namespace http = boost::beast::http;
    http::response<http::string_body> res{status, 11};
    res.set(http::field::content_type, "application/json");
    res.body() = std::move(body);
    res.prepare_payload();
    boost::system::error_code ec;
    http::write(s, res, ec);
    s.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
  }

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> n_requests_{0};
  std::thread accept_thread_;
  std::vector<std::thread> workers_;  // touched by the accept thread only, joined after it
  mutable std::mutex mu_;
  std::vector<std::string> bodies_;  // request bodies, in arrival order
};

}  // namespace pagedserve::loadgen::test
