#include "cli_app.hpp"

#include <cstdio>
#include <sstream>

namespace pagedserve {
namespace {

constexpr std::string_view shared_footer =
    "Every flag takes its value as --flag VALUE or --flag=VALUE; the last of a repeated flag wins.\n"
    "A bad command line exits with status 2.";

// "pagedserve serve": the app and the subcommand the command line had reached, for the hint that
// names the --help to read.
std::string command_path(const CLI::App& app) {
  std::string path = app.get_name();
  for (const CLI::App* sub = &app; !sub->get_subcommands().empty();) {
    sub = sub->get_subcommands().front();
    path += " " + sub->get_name();
  }
  return path;
}

cli_stop stop_from(const CLI::App& app, const CLI::ParseError& e) {
  if (dynamic_cast<const CLI::CallForHelp*>(&e) || dynamic_cast<const CLI::CallForAllHelp*>(&e))
    return cli_stop{0, app.help()};
  if (dynamic_cast<const CLI::CallForVersion*>(&e)) return cli_stop{0, std::string(e.what()) + "\n"};
  const std::string path = command_path(app);
  std::string text;
  std::istringstream lines(e.what());
  for (std::string line; std::getline(lines, line);) text += app.get_name() + ": " + line + "\n";
  text += "run `" + path + " --help` for the flags\n";
  return cli_stop{2, std::move(text)};
}

}  // namespace

void cli_app_setup(CLI::App& app, std::string_view footer) {
  app.set_version_flag("--version", app.get_name() + " " + PAGEDSERVE_VERSION);
  // As the hand-written parsers did: a script may append a flag to override one it already set.
  app.option_defaults()->always_capture_default()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.footer(footer.empty() ? std::string(shared_footer) : std::string(footer) + "\n" + std::string(shared_footer));
}

std::optional<cli_stop> cli_app_parse(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return stop_from(app, e);
  }
  return std::nullopt;
}

std::optional<cli_stop> cli_app_parse(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<const char*> argv = {app.get_name().c_str()};
  for (const std::string& a : args) argv.push_back(a.c_str());
  return cli_app_parse(app, static_cast<int>(argv.size()), argv.data());
}

int cli_stop_print(const cli_stop& stop) {
  std::fputs(stop.text.c_str(), stop.status == 0 ? stdout : stderr);
  return stop.status;
}

void cli_throw_if_any(const std::vector<std::string>& problems) {
  if (problems.empty()) return;
  std::string text;
  for (const std::string& p : problems) text += (text.empty() ? "" : "\n") + p;
  throw CLI::ValidationError(text);
}

CLI::Validator cli_non_negative() {
  return CLI::Validator(
      [](const std::string& text) { return text.starts_with('-') ? std::string("must not be negative") : std::string(); },
      "");
}

}  // namespace pagedserve
