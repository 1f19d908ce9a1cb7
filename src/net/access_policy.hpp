#pragma once
// Who may talk to the server (issue 17 item 7), decided from a request's headers alone. Plain functions
// with no Asio or Beast in them, so unit tests and the HTTP fuzz target call them directly.
//
// Without an API key a browser page is the threat: any page the user opens can send requests to
// 127.0.0.1, and a DNS-rebinding page can even read the answers. So a keyless server accepts a
// request only when its Host is loopback or listed (--allowed-hosts) and its Origin, when sent, is
// loopback, listed (--allowed-origins or --cors-allow-origin), or the server's own (the chat page it
// serves). With a key, the key decides, and every route but /health and the chat page needs it.
// Independently of both, a JSON POST must say Content-Type: application/json: a page can only send
// other types (text/plain, forms) without a CORS preflight.
#include <optional>
#include <string_view>

#include "pagedserve/config.hpp"
#include "api/openai_request.hpp"

namespace pagedserve::net {

// The headers the checks read; empty when absent.
struct request_origin {
  std::string_view host;    // Host: "name[:port]" or "[v6]:port"
  std::string_view origin;  // Origin: "scheme://host[:port]" or "null"
  bool has_origin = false;  // the Origin header was sent (even empty)
};

// localhost, 127.0.0.0/8 or [::1], with or without a port.
bool is_loopback_authority(std::string_view authority);
// "http://a:1" -> "a:1"; empty when origin is not an http(s) origin.
std::string_view origin_authority(std::string_view origin);
// application/json, in any case, with or without parameters ("; charset=utf-8").
bool is_json_media_type(std::string_view content_type);

bool host_allowed(const server_config& config, std::string_view host);
bool origin_allowed(const server_config& config, std::string_view origin, std::string_view host);

// 403 when a keyless server must refuse this request's Host or Origin; nullopt when it may go on
// (always, with an API key set).
std::optional<openai::api_error> refuse_origin(const server_config& config, const request_origin& r);
// 415 unless content_type is JSON (for the routes that take a JSON body).
std::optional<openai::api_error> refuse_content_type(std::string_view content_type);
// With an API key set, does path (a known route) need it? Every one but /health.
bool api_key_required(const server_config& config, std::string_view path);

}  // namespace pagedserve::net
