#pragma once
// CORS: which origin a response names in Access-Control-Allow-Origin (server.cors_allow_origin: empty
// for none, "*", or a comma-separated list), and the headers of an OPTIONS preflight answer.
#include <string>
#include <string_view>

#include "net/net_common.hpp"

namespace pagedserve::net {

// The Access-Control-Allow-Origin value for a request from origin; empty: none.
std::string cors_origin_for(std::string_view allowed, std::string_view origin);
// An OPTIONS answer's headers: Allow, and when cors_origin is set the preflight's grants (the headers
// the browser asked for, else Authorization and Content-Type).
header_list cors_preflight_headers(std::string_view cors_origin, std::string_view asked_headers);

}  // namespace pagedserve::net
