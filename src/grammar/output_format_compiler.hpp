#pragma once
// sampling_params::format to the grammar the sampler enforces: json_object (any JSON object),
// json_schema, regex, or GBNF, between its literal prefix and suffix. Compiled grammars are kept
// by their text (least recently used out), so a repeated schema costs a lookup.
#include <expected>
#include <memory>
#include <string>

#include "grammar/grammar.hpp"
#include "pagedserve/sampling.hpp"

namespace pagedserve::grammar {

// The grammar, or an error naming what is wrong (a bad or unsupported keyword, a GBNF position).
std::expected<std::shared_ptr<const grammar>, std::string> compile_output_format(const output_format& format);

// The same, through the process-wide cache of recent compilations (thread-safe).
std::expected<std::shared_ptr<const grammar>, std::string> compile_output_format_cached(const output_format& format);

}  // namespace pagedserve::grammar
