#pragma once
// One named spdlog logger per actor (sched, kv, exec, net, req), created on first use.
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace pagedserve {

inline std::shared_ptr<spdlog::logger> actor_logger(const std::string& name) {
  if (auto existing = spdlog::get(name)) return existing;
  auto logger = spdlog::default_logger()->clone(name);
  try {
    spdlog::register_logger(logger);
  } catch (const spdlog::spdlog_ex&) {  // another thread registered it first
    return spdlog::get(name);
  }
  return logger;
}

}  // namespace pagedserve
