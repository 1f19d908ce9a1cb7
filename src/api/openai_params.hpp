#pragma once
// Typed readers for the fields of OpenAI request bodies (simdjson DOM), shared by the request
// parsers. Each returns an api_error naming the argument when the value has the wrong type or range.
#include <simdjson.h>

#include <cmath>
#include <limits>
#include <optional>

#include "pagedserve/openai_request.hpp"

namespace pagedserve::openai::detail {

using simdjson::dom::element;
using simdjson::dom::element_type;
using maybe_error = std::optional<api_error>;

inline api_error bad_param(std::string_view param, std::string message) {
  return {400, std::move(message), "invalid_request_error", std::string(param), "invalid_value"};
}

inline api_error wrong_type(std::string_view param, std::string_view expected) {
  return {400, "'" + std::string(param) + "' must be " + std::string(expected), "invalid_request_error",
          std::string(param), "invalid_type"};
}

inline bool is_null(element e) { return e.type() == element_type::NULL_VALUE; }

inline maybe_error read_bool(element e, std::string_view param, bool& out) {
  if (e.type() != element_type::BOOL) return wrong_type(param, "a boolean");
  out = bool(e);
  return std::nullopt;
}

inline maybe_error read_string(element e, std::string_view param, std::string& out) {
  if (e.type() != element_type::STRING) return wrong_type(param, "a string");
  out = std::string(std::string_view(e));
  return std::nullopt;
}

inline maybe_error read_number(element e, std::string_view param, double lo, double hi, double& out) {
  double v = 0;
  if (e.type() == element_type::INT64) v = static_cast<double>(int64_t(e));
  else if (e.type() == element_type::UINT64) v = static_cast<double>(uint64_t(e));
  else if (e.type() == element_type::DOUBLE) v = double(e);
  else return wrong_type(param, "a number");
  if (!(v >= lo && v <= hi))
    return bad_param(param, "'" + std::string(param) + "' must be between " + std::to_string(lo) + " and " +
                                std::to_string(hi));
  out = v;
  return std::nullopt;
}

inline maybe_error read_integer(element e, std::string_view param, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
  // 5.0 is an integer to JSON clients that only have doubles.
  if (e.type() == element_type::DOUBLE) {
    const double d = double(e);
    if (std::trunc(d) != d) return wrong_type(param, "an integer");
    // Range-checked before the cast: converting a double outside int64 is undefined behaviour.
    if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi)))
      return bad_param(param, "'" + std::string(param) + "' must be between " + std::to_string(lo) + " and " +
                                  std::to_string(hi));
    out = static_cast<std::int64_t>(d);
  } else if (e.type() == element_type::INT64) {
    out = int64_t(e);
  } else if (e.type() == element_type::UINT64) {
    if (uint64_t(e) > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return bad_param(param, "'" + std::string(param) + "' is too large");
    out = static_cast<std::int64_t>(uint64_t(e));
  } else {
    return wrong_type(param, "an integer");
  }
  if (out < lo || out > hi)
    return bad_param(param, "'" + std::string(param) + "' must be between " + std::to_string(lo) + " and " +
                                std::to_string(hi));
  return std::nullopt;
}

// An array of token ids, each in [0, vocab_size).
inline maybe_error read_token_ids(element e, std::string_view param, int vocab_size, std::vector<token_id>& out) {
  if (e.type() != element_type::ARRAY) return wrong_type(param, "an array of token ids");
  for (element t : simdjson::dom::array(e)) {
    std::int64_t id = 0;
    if (auto err = read_integer(t, param, 0, vocab_size > 0 ? vocab_size - 1 : std::numeric_limits<int>::max(), id))
      return bad_param(param, "'" + std::string(param) + "' must hold token ids in [0, " +
                                  std::to_string(vocab_size) + ")");
    out.push_back(static_cast<token_id>(id));
  }
  return std::nullopt;
}

// The sampling knobs both generation endpoints share; false when key is none of them.
bool read_sampling_field(std::string_view key, element value, const parse_limits& limits, generation_request& r,
                         maybe_error& err);

}  // namespace pagedserve::openai::detail
