#pragma once
// The serve/generate command line parsed as the binary would parse it: args without the program name.
#include <expected>
#include <string>
#include <vector>

#include "src/cli_options.hpp"

namespace pagedserve::test {

inline std::expected<cli_options, cli_stop> cli_parse_args(std::vector<std::string> args) {
  args.insert(args.begin(), "pagedserve");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return cli_parse(static_cast<int>(argv.size()), argv.data());
}

}  // namespace pagedserve::test
