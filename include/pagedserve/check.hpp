#pragma once
// Project assert for cheap critical invariants (refcounts, block ownership): checked in every
// build type, logs what broke and aborts, because continuing would corrupt other requests.
#include <source_location>
#include <string_view>

namespace pagedserve {

[[noreturn]] void check_failed(std::string_view what, std::source_location where);

inline void ps_check(bool ok, std::string_view what,
                     std::source_location where = std::source_location::current()) {
  if (!ok) [[unlikely]] check_failed(what, where);
}

}  // namespace pagedserve
