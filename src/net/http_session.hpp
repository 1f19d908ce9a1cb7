#pragma once
// One HTTP/1.1 connection. Requests are read as they come (keep-alive and pipelining: up to
// max_pipelined read ahead) and answered strictly in order, one at a time, each by the http_api
// (routes and endpoints, http_api.hpp). A read stays pending while a request is being answered, so
// a client that closes its end mid-stream is seen at once and its generation cancelled. An upgrade
// at /v1/ws hands the socket to a ws_session.
//
// Writes go out one at a time from a queue of byte strings (all of it gathered into one write),
// so an SSE stream is flushed event by event. While the queue holds more than max_outbound_bytes or
// max_outbound_frames pieces, no further request is read or answered (write_queue.hpp). All state
// lives on the connection's strand.
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net/connection_registry.hpp"
#include "net/net_common.hpp"
#include "net/write_queue.hpp"
#include "pagedserve/config.hpp"
#include "pagedserve/engine_api.hpp"
#include "api/openai_request.hpp"

namespace pagedserve::net {

// A request answered over time (a generation): the session tells it these, on its strand.
class http_exchange {
 public:
  virtual ~http_exchange() = default;
  virtual void on_writable() = 0;     // the write queue drained: send what has accumulated
  virtual void on_client_gone() = 0;  // the socket closed or failed: cancel, write nothing more
};

class http_api;

// Draining (graceful shutdown): requests already read are answered (the http_api refuses new
// generations and upgrades), every response closes the connection, and an idle connection closes
// at once.
class http_session : public drain_listener, public std::enable_shared_from_this<http_session> {
 public:
  using request = http::request<http::string_body>;
  http_session(tcp::socket socket, std::shared_ptr<const http_api> api, const server_config& config,
               std::shared_ptr<connection_slot> slot);
  ~http_session() override;
  void run();
  void on_drain() override;

  // For the exchange answering the current request; call on executor() only.
  const asio::any_io_executor& executor() const { return executor_; }
  const server_config& config() const { return config_; }
  // A response head with the session's common fields (Server, CORS). No length: chunked if the
  // client speaks HTTP/1.1, else the body ends when the connection closes.
  std::string head(http::status status, std::string_view content_type, std::optional<std::size_t> content_length,
                   const header_list& extra = {}) const;
  void send(std::string bytes);  // bytes of the current response, in order
  bool sending() const { return writing_ || out_.has_queued(); }
  bool chunked() const { return version_ == 11; }  // may the current response use chunked encoding
  bool keep_alive() const { return keep_alive_; }
  void end_connection() { keep_alive_ = false; }  // close once the current response is out
  void finish_response();        // the current response is complete: on to the next request
  bool client_gone() const { return peer_closed_ || closed_; }
  bool draining() const { return draining_; }
  // Access-Control-Allow-Origin of the current response (empty: none).
  void set_cors_origin(std::string origin) { cors_origin_ = std::move(origin); }
  const std::string& cors_origin() const { return cors_origin_; }

  // A whole response to the current request (its head alone for HEAD), then on to the next one.
  void respond(http::status status, std::string_view content_type, std::string body, const header_list& extra = {});
  void respond_json(http::status status, std::string body) { respond(status, "application/json", std::move(body)); }
  void respond_error(const openai::api_error& e);
  // The current request is answered over time by x (a generation), which calls finish_response.
  void begin_exchange(std::shared_ptr<http_exchange> x) { exchange_ = std::move(x); }
  // Of the unknown request fields a client sent, those this connection has not warned about yet
  // (a client is told once, not once per request); bounded, so a client making up names cannot grow it.
  std::vector<std::string> fields_to_warn(const std::vector<std::string>& ignored);
  // Hands the socket to a WebSocket session on e once earlier responses are written.
  void upgrade(request req, engine_api& e);

 private:
  // A request read off the socket, or the error its reading ended in (answered, then the close).
  struct pending_item {
    std::optional<request> req;
    std::optional<openai::api_error> read_error;
  };

  void do_read();
  void on_header(beast::error_code ec, std::size_t bytes);
  void on_body(beast::error_code ec, std::size_t bytes);
  void on_read_error(beast::error_code ec);
  void start_next();
  void do_write();
  void on_write(beast::error_code ec, std::size_t bytes);
  void arm_idle_timer();
  void close_now();
  void close_after_writes();
  void drain();  // lingering close: read and drop what the client still sends

  tcp::socket socket_;
  asio::any_io_executor executor_;  // the connection's strand
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::deque<pending_item> pending_;  // read, not yet answered
  std::shared_ptr<const http_api> api_;  // routes and answers each request
  const server_config& config_;
  std::shared_ptr<connection_slot> slot_;  // counts this connection; handed on to a WebSocket session
 public:
  // The remote address's key (connection_slot::client_key), for the requests of this connection.
  std::uint64_t client_key() const { return slot_ ? slot_->client_key() : 0; }

 private:
  bool draining_ = false;
  asio::steady_timer idle_timer_, write_timer_;
  std::uint64_t idle_epoch_ = 0, write_epoch_ = 0;  // a timer firing for an older epoch is stale

  // The request being answered.
  bool active_ = false;
  bool head_only_ = false;    // HEAD: the response's head without its body
  bool keep_alive_ = true;
  unsigned version_ = 11;
  std::string cors_origin_;   // Access-Control-Allow-Origin for this response; empty = none
  std::shared_ptr<http_exchange> exchange_;
  std::vector<std::string> warned_fields_;  // fields_to_warn: names already warned about

  bool reading_ = false;
  bool read_stopped_ = false;  // no more requests will be read (upgrade, read error, closing)
  bool peer_closed_ = false;   // the client closed or reset its end
  bool closing_ = false;       // close once the queued writes are out
  bool closed_ = false;
  bool shut_down_ = false;     // our FIN is sent
  std::array<char, 4096> drain_buf_;
  std::optional<request> upgrade_;  // a WebSocket upgrade waiting for earlier writes to drain
  engine_api* upgrade_engine_ = nullptr;  // whose requests that WebSocket will carry

  write_queue out_;     // queued and being written
  bool writing_ = false;
  bool paused_ = false;  // out_ went over its bound: reading and answering resume once it drains
};

}  // namespace pagedserve::net
