#include "hub/hub_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/ssl.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "hub/hub_url.hpp"

namespace pagedserve {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;


// One client context for the process: the system's CA store (OpenSSL also honours SSL_CERT_FILE and
// SSL_CERT_DIR here) and peer verification always on.
asio::ssl::context& tls_context() {
  static asio::ssl::context ctx = [] {
    asio::ssl::context c(asio::ssl::context::tls_client);
    c.set_default_verify_paths();
    c.set_verify_mode(asio::ssl::verify_peer);
    return c;
  }();
  return ctx;
}

// One request/response over its own connection. Every operation is started asynchronously and the
// private io_context run until it completes, so tcp_stream's expiry bounds it (Beast's blocking
// calls have no timeout).
class connection final : public hub_http_body {
 public:
  explicit connection(const hub_http_options& o) : options_(o) {}
  ~connection() override {
    beast::error_code ec;
    if (plain_ || tls_) socket().close(ec);  // none when the name did not resolve
  }

  std::optional<std::string> open(const hub_url& u) {
    tcp::resolver resolver(io_);
    tcp::resolver::results_type endpoints;
    beast::error_code ec = asio::error::would_block;
    resolver.async_resolve(u.host, u.port, [&](beast::error_code e, tcp::resolver::results_type r) {
      ec = e;
      endpoints = std::move(r);
    });
    run_io();
    if (ec) return "cannot resolve " + u.host + ": " + ec.message();
    if (u.scheme == "https") {
      tls_ = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(io_, tls_context());
      // SNI (for names only: RFC 6066 has no IP literals there), and the certificate must name this host.
      boost::system::error_code not_ip;
      asio::ip::make_address(u.host, not_ip);
      if (not_ip && !SSL_set_tlsext_host_name(tls_->native_handle(), u.host.c_str()))
        return "cannot set TLS SNI for " + u.host;
      tls_->set_verify_callback(asio::ssl::host_name_verification(u.host));
    } else {
      plain_ = std::make_unique<beast::tcp_stream>(io_);
    }
    ec = run(options_.connect_timeout, [&](auto&& done) { tcp_layer().async_connect(endpoints, done); });
    if (ec) return "cannot connect to " + u.host + ":" + u.port + ": " + ec.message();
    if (tls_) {
      ec = run(options_.connect_timeout,
               [&](auto&& done) { tls_->async_handshake(asio::ssl::stream_base::client, done); });
      if (ec) return "TLS handshake with " + u.host + " failed (certificate not trusted?): " + ec.message();
    }
    return std::nullopt;
  }

  std::expected<hub_http_hop, std::string> request(const hub_url& u, const hub_headers& headers) {
    http::request<http::empty_body> req{http::verb::get, u.target, 11};
    const std::string authority = u.origin().substr(u.scheme.size() + 3);
    req.set(http::field::host, authority);
    for (const auto& [name, value] : headers) req.set(name, value);
    beast::error_code ec = run(options_.read_timeout, [&](auto&& done) {
      if (tls_) http::async_write(*tls_, req, done);
      else http::async_write(*plain_, req, done);
    });
    if (ec) return std::unexpected("cannot send the request to " + u.host + ": " + ec.message());
    parser_.emplace();
    parser_->body_limit(boost::none);  // model files are gigabytes; sizes are checked by the caller
    parser_->header_limit(64 * 1024);
    ec = run(options_.read_timeout, [&](auto&& done) {
      if (tls_) http::async_read_header(*tls_, buffer_, *parser_, done);
      else http::async_read_header(*plain_, buffer_, *parser_, done);
    });
    if (ec) return std::unexpected("no response from " + u.host + ": " + ec.message());
    hub_http_hop hop;
    hop.url = u.str();
    hop.status = static_cast<int>(parser_->get().result_int());
    for (const auto& field : parser_->get()) hop.headers[ascii_lower(field.name_string())] = std::string(field.value());
    // A body of known length (what CDNs send for files) is read straight into the caller's buffer,
    // a megabyte per call, rather than through the parser's small reads and a copy.
    if (const auto n = parser_->content_length(); n && !parser_->chunked()) raw_left_ = *n;
    return hop;
  }

  std::expected<std::size_t, std::string> read(std::span<char> out) override {
    if (!pending_error_.empty()) return std::unexpected(pending_error_);
    if (raw_left_) return read_raw(out);
    if (!parser_ || parser_->is_done() || out.empty()) return 0;
    auto& body = parser_->get().body();
    body.data = out.data();
    body.size = out.size();
    beast::error_code ec = run(options_.read_timeout, [&](auto&& done) {
      // read_some: what has arrived, not a full buffer, so progress moves as bytes come in.
      if (tls_) http::async_read_some(*tls_, buffer_, *parser_, done);
      else http::async_read_some(*plain_, buffer_, *parser_, done);
    });
    if (ec == http::error::need_buffer) ec = {};
    const std::size_t n = out.size() - body.size;
    body_bytes_ += n;
    if (ec) {
      pending_error_ = (ec == http::error::partial_message || ec == http::error::end_of_stream ||
                                ec == asio::error::eof || ec == asio::ssl::error::stream_truncated
                            ? std::string("the server closed the connection")
                            : ec.message()) +
                       " after " + std::to_string(body_bytes_) + " bytes of the body";
      if (n == 0) return std::unexpected(pending_error_);
    }
    return n;
  }

 private:
  std::expected<std::size_t, std::string> read_raw(std::span<char> out) {
    std::size_t n = std::min<std::uint64_t>(out.size(), *raw_left_);
    if (n == 0) return 0;
    if (buffer_.size() > 0) {  // body bytes that came in with the header
      n = asio::buffer_copy(asio::buffer(out.data(), n), buffer_.data());
      buffer_.consume(n);
    } else {
      std::size_t got = 0;
      beast::error_code ec = run(options_.read_timeout, [&](auto&& done) {
        auto into = asio::buffer(out.data(), n);
        auto record = [&got, done = std::move(done)](beast::error_code e, std::size_t k) mutable {
          got = k;
          done(e, k);
        };
        if (tls_) tls_->async_read_some(into, std::move(record));
        else plain_->async_read_some(into, std::move(record));
      });
      if (ec && got == 0) {
        pending_error_ = (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated
                              ? std::string("the server closed the connection")
                              : ec.message()) +
                         " after " + std::to_string(body_bytes_) + " bytes of the body";
        return std::unexpected(pending_error_);
      }
      n = got;
    }
    *raw_left_ -= n;
    body_bytes_ += n;
    return n;
  }

  beast::tcp_stream& tcp_layer() { return tls_ ? tls_->next_layer() : *plain_; }
  tcp::socket& socket() { return tcp_layer().socket(); }

  void run_io() {
    io_.restart();
    io_.run();
  }

  // Starts one async operation (initiate receives its completion handler) bounded by timeout, and
  // runs it to completion.
  template <class Initiate>
  beast::error_code run(std::chrono::milliseconds timeout, Initiate&& initiate) {
    beast::error_code result = asio::error::would_block;
    tcp_layer().expires_after(timeout);
    initiate([&result](beast::error_code ec, auto&&...) { result = ec; });
    run_io();
    tcp_layer().expires_never();
    return result;
  }

  hub_http_options options_;
  asio::io_context io_;
  std::unique_ptr<beast::tcp_stream> plain_;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls_;
  beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::buffer_body>> parser_;
  std::uint64_t body_bytes_ = 0;
  std::optional<std::uint64_t> raw_left_;  // body bytes still to come, when read without the parser
  std::string pending_error_;  // a read error reported after the bytes that came with it
};

}  // namespace

namespace {

// Appends body bytes to text up to limit, in chunks (a large limit allocates nothing up front);
// the read error that ended it early, if any.
std::optional<std::string> body_read_into(hub_http_body& body, std::string& text, std::size_t limit) {
  char chunk[16384];
  while (text.size() < limit) {
    auto got = body.read(std::span<char>(chunk, std::min(sizeof chunk, limit - text.size())));
    if (!got) return got.error();
    if (*got == 0) break;
    text.append(chunk, *got);
  }
  return std::nullopt;
}

}  // namespace

std::string hub_http_body::read_text(std::size_t limit) {
  std::string text;
  body_read_into(*this, text, limit);
  return text;
}

std::expected<std::string, std::string> hub_http_body::read_all(std::size_t limit) {
  std::string text;
  if (auto error = body_read_into(*this, text, limit)) return std::unexpected(*error);
  return text;
}

std::expected<hub_http_response, std::string> hub_http_get(const std::string& url, const hub_headers& headers,
                                                           const hub_http_options& options) {
  auto current = hub_url_parse(url);
  if (!current) return std::unexpected(current.error());
  hub_headers h = headers;
  hub_http_response response;
  for (int hop = 0;; ++hop) {
    auto conn = std::make_unique<connection>(options);
    if (auto error = conn->open(*current)) return std::unexpected(*error);
    auto answer = conn->request(*current, h);
    if (!answer) return std::unexpected(answer.error());
    response.hops.push_back(std::move(*answer));
    const hub_http_hop& last = response.hops.back();
    if (!last.redirect()) {
      response.body = std::move(conn);
      return response;
    }
    if (hop >= options.max_redirects) return std::unexpected("too many redirects from " + url);
    auto next = hub_url_resolve(*current, last.header("location"));
    if (!next) return std::unexpected("bad redirect from " + current->str() + ": " + next.error());
    if (next->origin() != current->origin())
      std::erase_if(h, [](const auto& kv) { return ascii_lower(kv.first) == "authorization"; });
    current = std::move(next);
  }
}

}  // namespace pagedserve
