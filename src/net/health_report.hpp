#pragma once
// What GET /health and GET /metrics report: the health JSON (the engine's figures, the process's
// resident memory, whether the server drains or still loads) and the metrics' scrape-time gauges.
#include <string>
#include <string_view>

#include "pagedserve/engine_status.hpp"
#include "metrics/metrics.hpp"

namespace pagedserve::net {

// {"status":"ok"|"draining","replica","model",<figures>,"rss_bytes","version"}
std::string health_body(std::string_view model_name, const engine_status& s, bool draining, std::string_view replica);
// {"status":"loading","replica","version"}: llama-server's answer while the model loads.
std::string loading_health_body(std::string_view replica);
// The engine gauges /metrics renders, from the engine's figures.
engine_gauges gauges_of(const engine_status& s);

}  // namespace pagedserve::net
