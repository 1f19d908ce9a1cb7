// Pipelined HTTP requests in one buffer, read as an http_session reads them: one request after another
// from the same bytes through the session's parser set-up (net/request_limits.hpp), each put through
// route()'s access checks (net/access_policy.hpp) and answered into a write_queue that stops the reading
// over its bound, as the session does; the "client" reads (the queue drains) only then. Must never
// crash; every refusal is a JSON error object; the queue never holds more than its bound plus the one
// answer that crossed it. The first byte picks the config (API key, listed hosts and origins).
#include <simdjson.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "net/access_policy.hpp"
#include "net/request_limits.hpp"
#include "net/write_queue.hpp"
#include "api/openai_response.hpp"

namespace {

namespace http = boost::beast::http;
using pagedserve::server_config;

void require(bool ok) {
  if (!ok) std::abort();
}

server_config config_from(std::uint8_t flags) {
  server_config c;
  c.max_header_bytes = 1024;
  c.max_body_bytes = 2048;
  c.max_outbound_bytes = 8192;
  c.max_outbound_frames = 16;
  if (flags & 1) c.api_key = "sk";
  if (flags & 2) c.allowed_hosts = "box.lan, api.lan:9000";
  if (flags & 4) c.allowed_origins = (flags & 8) ? "*" : "http://app.example";
  if (flags & 16) c.cors_allow_origin = "http://cors.example";
  return c;
}

// The answer's bytes: an error object for a refusal, else a body as long as a static file's (a short
// request can ask for a large answer: the amplification the bound exists for).
std::string answer(const server_config& config, const pagedserve::net::request_parser& parser) {
  using namespace pagedserve::net;
  const auto& req = parser.get();
  std::optional<pagedserve::openai::api_error> refusal =
      refuse_origin(config, {req[http::field::host], req[http::field::origin], req.count(http::field::origin) > 0});
  if (!refusal && req.method() == http::verb::post) refusal = refuse_content_type(req[http::field::content_type]);
  if (refusal) {
    const std::string body = pagedserve::openai::encode_error(*refusal);
    simdjson::dom::parser json;
    simdjson::dom::element e;
    require(json.parse(body).get(e) == simdjson::SUCCESS);
    return body;
  }
  (void)api_key_required(config, req.target());
  return std::string(std::min<std::size_t>(req.target().size() * 300 + req.body().size(), 20000), 'a');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const server_config config = config_from(data[0]);
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  pagedserve::net::write_queue out(config.max_outbound_bytes, static_cast<std::size_t>(config.max_outbound_frames));
  std::size_t largest = 0;
  while (!in.empty()) {
    if (!out.accepting()) {  // paused: the client reads, the queue drains, reading resumes
      out.start_write();
      out.finish_write();
      require(out.accepting());
    }
    pagedserve::net::request_parser parser;
    pagedserve::net::limit_request_parser(parser, config);
    parser.eager(true);
    boost::beast::error_code ec;
    bool too_large = false;
    while (!parser.is_done() && !in.empty()) {
      const std::size_t n = parser.put(boost::asio::buffer(in.data(), in.size()), ec);
      in.remove_prefix(n);
      if (ec == http::error::need_more) ec = {};
      if (ec || n == 0) break;
      if (parser.is_header_done() && pagedserve::net::declared_body_too_large(parser, config)) {
        too_large = true;
        break;
      }
    }
    if (!parser.is_done()) {  // a read error or the input ended: its 4xx, then the connection closes
      if (ec || too_large) out.push(pagedserve::openai::encode_error({400, "bad request", "invalid_request_error", "", "bad_http"}));
      break;
    }
    const std::string bytes = answer(config, parser);
    largest = std::max(largest, bytes.size());
    out.push(bytes);
    require(out.bytes() <= config.max_outbound_bytes + largest);
    if (!parser.get().keep_alive()) break;
  }
  return 0;
}
