#include "api/output_format_fields.hpp"

#include "grammar/output_format_compiler.hpp"
#include "grammar/regex_compiler.hpp"

namespace pagedserve::api {

namespace {

using kind = output_format::kind;

// A JSON schema given as an object, or as a string holding one (vLLM accepts both).
maybe_field_error schema_text(element value, std::string_view param, std::string& out) {
  if (value.type() == element_type::OBJECT || value.type() == element_type::BOOL) {
    out = simdjson::minify(value);
    return std::nullopt;
  }
  if (value.type() == element_type::STRING) {
    out = std::string(std::string_view(value));
    return std::nullopt;
  }
  return wrong_type(param, "a JSON schema (an object)");
}

// guided_choice / structured_outputs.choice: exactly one of the strings.
maybe_field_error choice_grammar(element value, std::string_view param, output_format& f) {
  if (value.type() != element_type::ARRAY) return wrong_type(param, "an array of strings");
  std::string alternatives;
  for (element c : simdjson::dom::array(value)) {
    if (c.type() != element_type::STRING) return wrong_type(param, "an array of strings");
    alternatives += (alternatives.empty() ? "" : " | ") + grammar::gbnf_literal(std::string_view(c));
  }
  if (alternatives.empty()) return bad_value(param, "'" + std::string(param) + "' must not be empty");
  f = {kind::grammar, "root ::= " + alternatives + "\n", "", ""};
  return std::nullopt;
}

maybe_field_error response_format(element value, std::string_view param, output_format& f) {
  std::string_view type;
  if (value.type() != element_type::OBJECT || value["type"].get(type) != simdjson::SUCCESS)
    return wrong_type(param, "an object with a 'type'");
  if (type == "text") {
    f = {};
  } else if (type == "json_object") {
    f = {kind::json_object, "", "", ""};
  } else if (type == "json_schema") {
    element spec, schema;
    if (value["json_schema"].get(spec) != simdjson::SUCCESS || spec.type() != element_type::OBJECT)
      return bad_value(param, "response_format 'json_schema' needs a 'json_schema' object");
    if (spec["schema"].get(schema) != simdjson::SUCCESS)
      return bad_value(param, "response_format 'json_schema' needs 'json_schema.schema'");
    f.type = kind::json_schema;
    if (auto err = schema_text(schema, param, f.spec)) return err;
  } else {
    return bad_value(param, "response_format type must be text, json_object or json_schema, not '" + std::string(type) + "'");
  }
  return std::nullopt;
}

maybe_field_error structured_outputs(element value, std::string_view param, output_format& f) {
  if (value.type() != element_type::OBJECT) return wrong_type(param, "an object");
  int n_set = 0;
  for (auto [key, v] : simdjson::dom::object(value)) {
    if (is_null(v)) continue;
    maybe_field_error err;
    if (key == "json") {
      f.type = kind::json_schema;
      err = schema_text(v, param, f.spec);
    } else if (key == "regex" || key == "grammar") {
      f.type = key == "regex" ? kind::regex : kind::grammar;
      err = read_string(v, param, f.spec);
    } else if (key == "choice") {
      err = choice_grammar(v, param, f);
    } else if (key == "json_object") {
      bool on = false;
      err = read_bool(v, param, on);
      if (!on) continue;
      f = {kind::json_object, "", "", ""};
    } else {
      // whitespace_pattern, disable_fallback, ...: options of vLLM's backends, meaningless here
      continue;
    }
    if (err) return err;
    ++n_set;
  }
  if (n_set > 1) return bad_value(param, "'structured_outputs' takes one of json, regex, grammar, choice, json_object");
  return std::nullopt;
}

}  // namespace

bool read_output_format_field(std::string_view key, element value, sampling_params& p, maybe_field_error& err) {
  output_format f;
  if (key == "response_format") {
    err = response_format(value, key, f);
  } else if (key == "structured_outputs") {
    err = structured_outputs(value, key, f);
  } else if (key == "guided_json" || key == "json_schema") {
    f.type = kind::json_schema;
    err = schema_text(value, key, f.spec);
  } else if (key == "guided_regex") {
    f.type = kind::regex;
    err = read_string(value, key, f.spec);
  } else if (key == "guided_grammar" || key == "grammar") {
    f.type = kind::grammar;
    err = read_string(value, key, f.spec);
  } else if (key == "guided_choice") {
    err = choice_grammar(value, key, f);
  } else {
    return false;
  }
  if (err || f.type == kind::none) return true;
  if (p.format.type != kind::none)
    err = bad_value(key, "only one structured-output constraint per request ('" + std::string(key) + "' is a second)");
  else if (auto compiled = grammar::compile_output_format_cached(f); !compiled)
    err = bad_value(key, "invalid '" + std::string(key) + "': " + compiled.error());
  else
    p.format = std::move(f);
  return true;
}

}  // namespace pagedserve::api
