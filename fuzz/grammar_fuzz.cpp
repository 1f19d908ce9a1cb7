// Untrusted constraint texts: the same bytes as a GBNF grammar, a regex and a JSON schema (what a
// client sends in grammar, guided_regex and response_format). Each compiles or returns an error,
// never crashes; what compiles is then matched against the input's own bytes, which must end in a
// bounded number of steps.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "grammar/grammar_matcher.hpp"
#include "grammar/output_format_compiler.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace g = pagedserve::grammar;
  using kind = pagedserve::output_format::kind;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (kind k : {kind::grammar, kind::regex, kind::json_schema}) {
    auto compiled = g::compile_output_format({k, text, "", ""});
    if (!compiled) continue;
    g::grammar_matcher m(*compiled);
    for (char c : text)
      if (!m.accept(std::string_view(&c, 1))) break;
    (void)m.can_end();
  }
  return 0;
}
