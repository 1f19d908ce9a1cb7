#pragma once
// GET /health of the target's host and port, read as flat JSON numbers (running, waiting,
// kv_blocks_total, kv_blocks_free, rss_bytes, ...). Blocking, with a deadline: the soak calls it
// between phases and once per warm-up.
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

std::expected<health_status, std::string> health_get(const target_spec& target, std::chrono::milliseconds timeout);

}  // namespace pagedserve::loadgen
