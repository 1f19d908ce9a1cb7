#include "api/request_fields.hpp"

#include <cmath>
#include <limits>

#include "api/output_format_fields.hpp"

namespace pagedserve::api {
namespace {

constexpr std::size_t max_stop_strings = 16;
constexpr std::size_t max_stop_length = 256;

field_error out_of_range(std::string_view param, auto lo, auto hi) {
  return bad_value(param, "'" + std::string(param) + "' must be between " + std::to_string(lo) + " and " +
                              std::to_string(hi));
}

// A string or an array of strings; null means none.
maybe_field_error read_stop(element e, std::string_view param, std::vector<std::string>& out) {
  if (e.type() == element_type::STRING) {
    out.emplace_back(std::string_view(e));
  } else if (e.type() == element_type::ARRAY) {
    for (element s : simdjson::dom::array(e)) {
      if (s.type() != element_type::STRING) return wrong_type(param, "a string or an array of strings");
      out.emplace_back(std::string_view(s));
    }
  } else if (!is_null(e)) {
    return wrong_type(param, "a string or an array of strings");
  }
  if (out.size() > max_stop_strings) return bad_value(param, "at most 16 stop strings");
  for (const auto& s : out)
    if (s.empty() || s.size() > max_stop_length) return bad_value(param, "stop strings must be 1 to 256 bytes");
  return std::nullopt;
}

}  // namespace

field_error bad_value(std::string_view param, std::string message) {
  return {std::string(param), std::move(message), "invalid_value"};
}

field_error wrong_type(std::string_view param, std::string_view expected) {
  return {std::string(param), "'" + std::string(param) + "' must be " + std::string(expected), "invalid_type"};
}

maybe_field_error read_bool(element e, std::string_view param, bool& out) {
  if (e.type() != element_type::BOOL) return wrong_type(param, "a boolean");
  out = bool(e);
  return std::nullopt;
}

maybe_field_error read_string(element e, std::string_view param, std::string& out) {
  if (e.type() != element_type::STRING) return wrong_type(param, "a string");
  out = std::string(std::string_view(e));
  return std::nullopt;
}

maybe_field_error read_number(element e, std::string_view param, double lo, double hi, double& out) {
  double v = 0;
  if (e.type() == element_type::INT64) v = static_cast<double>(int64_t(e));
  else if (e.type() == element_type::UINT64) v = static_cast<double>(uint64_t(e));
  else if (e.type() == element_type::DOUBLE) v = double(e);
  else return wrong_type(param, "a number");
  if (!(v >= lo && v <= hi)) return out_of_range(param, lo, hi);
  out = v;
  return std::nullopt;
}

maybe_field_error read_integer(element e, std::string_view param, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
  if (e.type() == element_type::DOUBLE) {
    const double d = double(e);
    if (std::trunc(d) != d) return wrong_type(param, "an integer");
    // Range-checked before the cast: converting a double outside int64 is undefined behaviour.
    if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi))) return out_of_range(param, lo, hi);
    out = static_cast<std::int64_t>(d);
  } else if (e.type() == element_type::INT64) {
    out = int64_t(e);
  } else if (e.type() == element_type::UINT64) {
    if (uint64_t(e) > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return bad_value(param, "'" + std::string(param) + "' is too large");
    out = static_cast<std::int64_t>(uint64_t(e));
  } else {
    return wrong_type(param, "an integer");
  }
  if (out < lo || out > hi) return out_of_range(param, lo, hi);
  return std::nullopt;
}

bool read_sampling_param(std::string_view key, element value, sampling_params& p, maybe_field_error& err) {
  double d = 0;
  std::int64_t i = 0;
  if (read_output_format_field(key, value, p, err)) {
    return true;
  } else if (key == "max_tokens" || key == "max_completion_tokens") {
    err = read_integer(value, key, 1, std::numeric_limits<std::int32_t>::max(), i);
    p.max_tokens = static_cast<int>(i);
  } else if (key == "temperature") {
    err = read_number(value, key, 0.0, 100.0, d);
    p.temperature = static_cast<float>(d);
  } else if (key == "top_p") {
    err = read_number(value, key, 0.0, 1.0, d);
    if (!err && d <= 0.0) err = bad_value(key, "'top_p' must be in (0, 1]");
    p.top_p = static_cast<float>(d);
  } else if (key == "top_k") {
    err = read_integer(value, key, -1, 1 << 24, i);
    p.top_k = i < 0 ? 0 : static_cast<int>(i);  // -1 means all, as vLLM
  } else if (key == "min_p") {
    err = read_number(value, key, 0.0, 1.0, d);
    p.min_p = static_cast<float>(d);
  } else if (key == "presence_penalty" || key == "frequency_penalty") {
    err = read_number(value, key, -2.0, 2.0, d);
    (key == "presence_penalty" ? p.presence_penalty : p.frequency_penalty) = static_cast<float>(d);
  } else if (key == "repetition_penalty") {
    err = read_number(value, key, 0.01, 10.0, d);
    p.repetition_penalty = static_cast<float>(d);
  } else if (key == "seed") {
    err = read_integer(value, key, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(), i);
    p.seed = static_cast<std::uint64_t>(i);
  } else if (key == "stop") {
    err = read_stop(value, key, p.stop);
  } else if (key == "ignore_eos") {
    err = read_bool(value, key, p.ignore_eos);
  } else if (key == "cache_salt") {
    err = read_string(value, key, p.cache_salt);
  } else {
    return false;
  }
  return true;
}

}  // namespace pagedserve::api
