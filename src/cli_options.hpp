#pragma once
// The command line of `pagedserve`: its subcommands and every flag, defined once (CLI11) for both
// parsing and --help. serve and generate read --config first, whatever its place, and every other
// flag overrides the file. vLLM's and llama-server's spellings are aliases of ours, and every long flag
// has an environment variable PAGEDSERVE_<FLAG> (the command line wins over it).
#include <CLI/CLI.hpp>

#include <expected>
#include <string>
#include <vector>

#include "cli_app.hpp"
#include "cli_tools.hpp"
#include "pagedserve/config.hpp"
#include "pagedserve/sampling.hpp"

namespace pagedserve {

struct cli_options {
  std::string command;  // the subcommand: serve, generate, tokenize, chat-template or convert
  config settings;      // serve and generate
  int ctx_size = 0;                // serve -c/--ctx-size: the KV pool in tokens, made into engine.kv_blocks
  bool demo_model = false;         // --demo-model: the random-weight demo rather than the shipped model
  std::vector<std::string> notes;  // warnings about accepted-but-ignored flags, logged once logging is set up
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
