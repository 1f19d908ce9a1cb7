#pragma once
// Every #include of the table's files, resolved the way the compiler would: a quoted name first
// beside the including file, then in the include dirs; a name found there is one of our files
// (root-relative path), any other name is a system or third-party header.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "layer_table.hpp"

namespace layer_check {

struct include_edge {
  int line = 0;         // 1-based, in the including file
  std::string written;  // as written between the quotes or brackets
  std::string target;   // root-relative path when it is one of our files, else empty
};

// root-relative path -> its includes in file order. Files the table lists but that cannot be read
// are reported in unreadable.
struct include_graph {
  std::map<std::string, std::vector<include_edge>> edges;
  std::vector<std::string> unreadable;
};

include_graph include_graph_scan(const layer_table& table, const std::filesystem::path& root);

}  // namespace layer_check
