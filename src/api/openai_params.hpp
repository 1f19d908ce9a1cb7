#pragma once
// Field readers of the OpenAI request parsers: the shared ones (api/request_fields.hpp) plus the
// OpenAI-only ones; a field_error becomes an OpenAI api_error at the parser's boundary.
#include <limits>

#include "api/request_fields.hpp"
#include "api/openai_request.hpp"

namespace pagedserve::openai::detail {

using api::element;
using api::element_type;
using api::is_null;
using api::read_bool;
using api::read_integer;
using api::read_number;
using api::read_string;
using api::wrong_type;
using maybe_error = api::maybe_field_error;

inline api::field_error bad_param(std::string_view param, std::string message) {
  return api::bad_value(param, std::move(message));
}

// Every field error is a 400 invalid_request_error naming the argument.
inline api_error to_api_error(api::field_error e) {
  return {400, std::move(e.message), "invalid_request_error", std::move(e.param), std::move(e.code)};
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

// The arguments both generation endpoints share (the sampling knobs, model, n, stream, logit_bias,
// user, ...); false when key is none of them.
bool read_sampling_field(std::string_view key, element value, const parse_limits& limits, generation_request& r,
                         maybe_error& err);

}  // namespace pagedserve::openai::detail
