#include "pagedserve/check.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>

namespace pagedserve {

void check_failed(std::string_view what, std::source_location where) {
  spdlog::critical("invariant broken: {} at {}:{}", what, where.file_name(), where.line());
  spdlog::shutdown();
  std::abort();
}

}  // namespace pagedserve
