#pragma once
// The command line of `pagedserve`: its subcommands and every flag, defined once (CLI11) for both
// parsing and --help. serve and generate read --config first, whatever its place, and every other
// flag overrides the file.
#include <CLI/CLI.hpp>

#include <expected>
#include <string>

#include "cli_app.hpp"
#include "cli_tools.hpp"
#include "pagedserve/config.hpp"
#include "pagedserve/sampling.hpp"

namespace pagedserve {

struct cli_options {
  std::string command;  // the subcommand: serve, generate, tokenize, chat-template or convert
  config settings;      // serve and generate
  // generate only
  std::string prompt;
  sampling_params sampling;
  cli_tool_options tool;  // tokenize, chat-template and convert
};

// Sets app up (cli_app_setup) with every subcommand and flag of `pagedserve`, bound to o. The
// serve and generate callbacks validate the resulting config, every problem reported together.
void cli_define(CLI::App& app, cli_options& o);

// Parses a whole command line (argv[0] included): the options, or why the program stops here.
std::expected<cli_options, cli_stop> cli_parse(int argc, const char* const* argv);

}  // namespace pagedserve
