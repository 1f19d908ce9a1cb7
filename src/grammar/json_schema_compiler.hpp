#pragma once
// JSON Schema to GBNF: the grammar of the JSON texts a schema accepts, with limited optional
// whitespace between tokens. docs/structured-output.md lists the keywords; a validation keyword
// this compiler does not implement is an error naming it, never silently dropped.
#include <expected>
#include <string>
#include <string_view>

namespace pagedserve::grammar {

// The rules of any JSON value (json-value, json-object, json-string, ...), and `ws`.
std::string json_gbnf_rules();

// The grammar (rule `root`) of the JSON texts that validate against schema_json, or an error such
// as "unsupported JSON schema keyword 'not'".
std::expected<std::string, std::string> json_schema_to_gbnf(std::string_view schema_json);

}  // namespace pagedserve::grammar
