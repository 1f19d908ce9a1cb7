#include "include_graph.hpp"

#include <filesystem>
#include <fstream>
#include <optional>

namespace layer_check {

namespace {

namespace fs = std::filesystem;

struct include_directive {
  std::string name;
  bool quoted = false;
};

// `#include "x"` or `#include <x>`, spaces allowed around '#'; anything else (including a macro
// include, which we do not use) is not an include.
std::optional<include_directive> include_of(const std::string& line) {
  std::size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos || line[i] != '#') return std::nullopt;
  i = line.find_first_not_of(" \t", i + 1);
  if (i == std::string::npos || line.compare(i, 7, "include") != 0) return std::nullopt;
  i = line.find_first_not_of(" \t", i + 7);
  if (i == std::string::npos || (line[i] != '"' && line[i] != '<')) return std::nullopt;
  const char close = line[i] == '"' ? '"' : '>';
  const std::size_t end = line.find(close, i + 1);
  if (end == std::string::npos) return std::nullopt;
  return include_directive{line.substr(i + 1, end - i - 1), close == '"'};
}

// The root-relative path a name resolves to among the table's files (or, for a file the table does
// not list, on disk under root), or empty.
std::string resolve(const layer_table& table, const fs::path& root, const std::string& from,
                    const include_directive& inc) {
  std::vector<fs::path> candidates;
  if (inc.quoted) candidates.push_back(fs::path(from).parent_path() / inc.name);
  for (const auto& dir : table.include_dirs) candidates.push_back(fs::path(dir) / inc.name);
  for (const auto& c : candidates) {
    const std::string path = c.lexically_normal().generic_string();
    if (table.files.contains(path)) return path;
  }
  for (const auto& c : candidates) {
    const std::string path = c.lexically_normal().generic_string();
    std::error_code ec;
    if (!path.starts_with("..") && fs::is_regular_file(root / path, ec)) return path;
  }
  return {};
}

}  // namespace

include_graph include_graph_scan(const layer_table& table, const fs::path& root) {
  include_graph graph;
  for (const auto& [path, file] : table.files) {
    std::ifstream in(file.disk);
    if (!in) {
      graph.unreadable.push_back(path + " (" + file.disk.string() + ")");
      continue;
    }
    auto& edges = graph.edges[path];
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      if (auto inc = include_of(line)) edges.push_back({n, inc->name, resolve(table, root, path, *inc)});
    }
  }
  return graph;
}

}  // namespace layer_check
