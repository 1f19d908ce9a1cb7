#pragma once
// A binary's --help is written from the same CLI11 definitions that parse its flags: this checks,
// for an app and each of its subcommands, that the help text names every option and positional
// defined there (and shows its description), so a flag can never be accepted but left unlisted.
#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

namespace pagedserve::test {

inline void expect_help_lists_every_option(const CLI::App& app) {
  const std::string help = app.help();
  const std::vector<const CLI::Option*> options = app.get_options();
  EXPECT_FALSE(options.empty()) << app.get_name();
  for (const CLI::Option* opt : options) {
    std::vector<std::string> names;
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
    if (!opt->nonpositional()) names.push_back(opt->get_name(true));
    EXPECT_FALSE(names.empty());
    for (const std::string& name : names)
      EXPECT_NE(help.find(name), std::string::npos) << app.get_name() << " --help lacks " << name << "\n" << help;
    EXPECT_NE(help.find(opt->get_description()), std::string::npos)
        << app.get_name() << " --help lacks the description of " << opt->get_name() << "\n" << help;
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name().empty()) continue;  // an option group: its options are in app's help
    EXPECT_NE(help.find(sub->get_name()), std::string::npos) << app.get_name() << " --help lacks " << sub->get_name();
    expect_help_lists_every_option(*sub);
  }
}

}  // namespace pagedserve::test
