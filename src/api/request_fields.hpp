#pragma once
// Typed readers for the fields of client requests (simdjson DOM), shared by the WebSocket protocol
// and the OpenAI API: each checks type and range and names the offending field in a field_error,
// which each protocol turns into its own error shape. The sampling knobs both protocols accept are
// read here once, so a parameter means the same thing, with the same bounds, on every endpoint.
#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pagedserve/sampling.hpp"

namespace pagedserve::api {

using simdjson::dom::element;
using simdjson::dom::element_type;

struct field_error {
  std::string param;    // the field, as the client spelled it
  std::string message;
  std::string code;     // invalid_type or invalid_value
};
using maybe_field_error = std::optional<field_error>;

field_error bad_value(std::string_view param, std::string message);
field_error wrong_type(std::string_view param, std::string_view expected);

inline bool is_null(element e) { return e.type() == element_type::NULL_VALUE; }

maybe_field_error read_bool(element e, std::string_view param, bool& out);
maybe_field_error read_string(element e, std::string_view param, std::string& out);
maybe_field_error read_number(element e, std::string_view param, double lo, double hi, double& out);
// An integer in [lo, hi]; an integral double (5.0) counts, as JSON clients may only have doubles.
maybe_field_error read_integer(element e, std::string_view param, std::int64_t lo, std::int64_t hi, std::int64_t& out);

// The sampling parameters of sampling_params: max_tokens (or OpenAI's max_completion_tokens),
// temperature, top_p, top_k, min_p, presence/frequency/repetition penalties, seed, stop, ignore_eos,
// cache_salt, and the structured-output fields (api/output_format_fields.hpp). False when key is
// none of them; otherwise err is set if the value is bad.
bool read_sampling_param(std::string_view key, element value, sampling_params& p, maybe_field_error& err);

}  // namespace pagedserve::api
