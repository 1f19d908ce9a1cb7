#pragma once
// How an HTTP session reads one request: the parser's limits from the config and the early refusal of
// a declared body over the limit. Shared with fuzz/http_pipeline_fuzz.cpp, which feeds pipelined
// requests from one buffer through the same parser set-up without a socket.
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "pagedserve/config.hpp"

namespace pagedserve::net {

using request_parser = boost::beast::http::request_parser<boost::beast::http::string_body>;

inline void limit_request_parser(request_parser& parser, const server_config& config) {
  parser.body_limit(config.max_body_bytes);
  parser.header_limit(static_cast<std::uint32_t>(config.max_header_bytes));
}

// Once the header is read: a declared body over the limit gets its 413 without being read.
inline bool declared_body_too_large(const request_parser& parser, const server_config& config) {
  const auto length = parser.content_length();
  return length && *length > config.max_body_bytes;
}

}  // namespace pagedserve::net
