#pragma once
// Where the program finds what it ships beside itself: the chat page (web/) and the default model
// (models/). Installed, that is <prefix>/share/pagedserve beside <prefix>/bin/pagedserve; in a build
// tree, <build>/share/pagedserve, which CMake links to the source tree's web/ and tests/data/models.
// Found from the running binary's own path, so a moved install or build tree keeps working and no
// source path is compiled in.
#include <filesystem>
#include <optional>

namespace pagedserve {

// The data folder for a binary at exe (a path to the executable): <exe dir>/../share/pagedserve,
// else <exe dir>/share/pagedserve; nothing when neither exists.
std::optional<std::filesystem::path> share_dir_for(const std::filesystem::path& exe);

// The same for the running program (/proc/self/exe).
std::optional<std::filesystem::path> share_dir_find();

}  // namespace pagedserve
