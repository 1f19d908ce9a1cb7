#pragma once
// Blocking GETs with a deadline on the target's host and port: /health read as flat JSON numbers
// (running, waiting, kv_blocks_total, kv_blocks_free, rss_bytes, ...) for the soak, and
// /v1/models for the model name OpenAI requests must carry.
#include <chrono>
#include <expected>
#include <map>
#include <optional>
#include <string>

#include "loadgen/options.hpp"

namespace pagedserve::loadgen {

struct health_status {
  int http_status = 0;
  std::string body;
  std::map<std::string, double> numbers;  // every top-level numeric member
  std::optional<double> number(const std::string& key) const {
    const auto it = numbers.find(key);
    return it == numbers.end() ? std::nullopt : std::optional<double>(it->second);
  }
};

// GET path on the target's host and port; the body, and its top-level numbers when it is JSON.
std::expected<health_status, std::string> http_get(const target_spec& target, const std::string& path,
                                                   std::chrono::milliseconds timeout);
inline std::expected<health_status, std::string> health_get(const target_spec& target, std::chrono::milliseconds timeout) {
  return http_get(target, "/health", timeout);
}
// The first model id GET /v1/models lists (OpenAI targets), or nothing.
std::optional<std::string> openai_first_model(const target_spec& target);

}  // namespace pagedserve::loadgen
