#pragma once
// Command-line parsing for `pagedserve serve|generate`: flags override the JSON config.
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "pagedserve/config.hpp"
#include "pagedserve/sampling.hpp"

namespace pagedserve {

struct cli_options {
  std::string command;  // "serve" or "generate"
  config settings;
  // generate only
  std::string prompt;
  sampling_params sampling;
  bool show_help = false;
};

// Parses argv; loads --config first (if given) so every other flag overrides it.
std::expected<cli_options, std::vector<std::string>> cli_parse(int argc, char** argv);
std::string cli_usage();

}  // namespace pagedserve
