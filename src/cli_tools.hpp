#pragma once
// The offline subcommands: `tokenize`, `chat-template` and `convert`. They print to stdout and
// return the process exit code; errors go to stderr as one line.
#include <optional>

namespace pagedserve {

// Runs argv[1] when it names a tool; nothing when it does not.
std::optional<int> cli_tool_run(int argc, char** argv);

}  // namespace pagedserve
