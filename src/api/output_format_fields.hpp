#pragma once
// The structured-output fields of a request, in every dialect clients send them: OpenAI's
// response_format (text, json_object, json_schema), vLLM's structured_outputs {json, regex, grammar,
// choice, json_object} and legacy guided_json / guided_regex / guided_grammar / guided_choice, and
// llama.cpp's grammar and json_schema. Each is compiled as it is read, so an invalid schema, regex
// or grammar, or an unsupported keyword, is a field error naming the problem before anything runs.
#include "api/request_fields.hpp"

namespace pagedserve::api {

// False when key is none of these fields; otherwise p.format is set, or err.
bool read_output_format_field(std::string_view key, element value, sampling_params& p, maybe_field_error& err);

}  // namespace pagedserve::api
