#pragma once
// PS_TRY(out, expr): assigns the value of the std::expected `expr` to `out`, or returns its error from
// the enclosing function (which returns a std::expected with the same error type). The loaders and
// the config readers read field after field this way.
#include <expected>
#include <utility>

#define PS_TRY(out, expr)                                          \
  do {                                                             \
    auto try_result_ = (expr);                                     \
    if (!try_result_) return std::unexpected(try_result_.error()); \
    out = std::move(*try_result_);                                 \
  } while (0)
