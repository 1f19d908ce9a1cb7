#pragma once
// Strong ids: a request id cannot be passed where a block id is expected.
#include <compare>
#include <cstdint>
#include <functional>

namespace pagedserve {

template <class Tag, class Rep = std::int64_t>
struct strong_id {
  Rep value{};
  constexpr auto operator<=>(const strong_id&) const = default;
};

using request_id = strong_id<struct request_tag, std::uint64_t>;  // engine-wide, assigned by the scheduler actor
using step_id = strong_id<struct step_tag, std::uint64_t>;        // one engine step (one forward pass)
using block_id = strong_id<struct block_tag, std::int32_t>;       // index into the KV block pool
using token_id = std::int32_t;                                    // vocabulary index (plain: used in hot loops)

}  // namespace pagedserve

template <class Tag, class Rep>
struct std::hash<pagedserve::strong_id<Tag, Rep>> {
  std::size_t operator()(const pagedserve::strong_id<Tag, Rep>& id) const noexcept {
    return std::hash<Rep>{}(id.value);
  }
};
