#pragma once
// What every binary's command line shares (pagedserve and its subcommands, loadgen, the load-test
// tools), over CLI11: each flag is defined once, and that one definition parses it (as --flag VALUE
// or --flag=VALUE) and writes its line of --help, so the two cannot drift apart.
#include <CLI/CLI.hpp>

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagedserve {

// Why parsing ends the program rather than running it: --help or --version asked (status 0, the
// text for stdout), or a bad command line (status 2, what is wrong and where the flags are listed,
// for stderr).
struct cli_stop {
  int status = 0;
  std::string text;
};

// Sets an app up as every binary of ours is: -h/--help, --version, the last of a repeated flag
// wins, built-in defaults shown in --help, and a footer (the binary's own text, then the shared
// lines). Call it before adding subcommands, which inherit all of it.
void cli_app_setup(CLI::App& app, std::string_view footer = {});

// Parses a command line into the variables the app's options are bound to, then runs the app's
// callbacks (which validate). Nothing when the program should run on.
std::optional<cli_stop> cli_app_parse(CLI::App& app, int argc, const char* const* argv);
// The same for arguments without the program name, as tests write them.
std::optional<cli_stop> cli_app_parse(CLI::App& app, const std::vector<std::string>& args);

// Prints a stop's text to stdout (status 0) or stderr and returns its status, the exit code.
int cli_stop_print(const cli_stop& stop);

// Throws CLI11's validation error carrying every problem (one per line) when there are any: for an
// app's final callback, so a bad combination of flags ends like a bad flag.
void cli_throw_if_any(const std::vector<std::string>& problems);

// Refuses a negative value for an unsigned field (CLI11 alone reads "-1" as the type's largest value).
CLI::Validator cli_non_negative();

// An option whose text becomes T through parse (std::expected<T, std::string>(std::string_view)):
// a parse error is reported naming the flag. The last of a repeated flag wins.
template <class T, class Parse>
CLI::Option* cli_add_parsed(CLI::App& app, const std::string& name, T& field, Parse parse, const std::string& description) {
  return app.add_option_function<std::string>(
      name,
      [&field, parse, name](const std::string& text) {
        auto parsed = parse(std::string_view(text));
        if (!parsed) throw CLI::ValidationError(name, parsed.error());
        field = std::move(*parsed);
      },
      description);
}

}  // namespace pagedserve
