#pragma once
// The GBNF of the decimal integers in [lo, hi] (either bound may be absent), digit by digit, as
// JSON writes them: no leading zeros, at most 16 digits, "-" only for negative values.
#include <expected>
#include <optional>
#include <string>

namespace pagedserve::grammar {

std::expected<std::string, std::string> integer_range_gbnf(std::optional<long long> lo, std::optional<long long> hi);

}  // namespace pagedserve::grammar
