#pragma once
// The layer table: which layer owns each file, which layers and third-party libraries a layer may
// include, and the known violations allowed for now. CMake writes it from cmake/layer_table.cmake
// (build/layers.table); the tests write small ones by hand. One directive per line, '#' comments:
//   layer <name> uses <layer>... third_party <name>...   (bottom-up order; 'uses' lists every layer
//                                                          whose headers the layer's files may reach)
//   third_party <name> <include prefix>...               (<boost/asio/...> -> asio)
//   include_dir <dir>                                    (quote-include search path, root-relative)
//   file <layer> <path> [<disk path>]                    (root-relative; disk path: a fixture's real
//                                                          location, relative to the table's folder)
//   allow <layer> <header>                               (the layer may reach header and all it includes)
#include <expected>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace layer_check {

struct layer {
  std::string name;
  std::set<std::string> uses;         // layers whose headers its files may reach (itself implied)
  std::set<std::string> third_party;  // third-party names it may reach
};

struct table_file {
  std::string layer;
  std::filesystem::path disk;  // where to read it
};

struct layer_table {
  std::vector<layer> layers;                          // in table order, bottom first
  std::map<std::string, std::vector<std::string>> third_party_prefixes;  // name -> include prefixes
  std::vector<std::string> include_dirs;              // root-relative
  std::map<std::string, table_file> files;            // root-relative path -> owner and location
  std::set<std::pair<std::string, std::string>> allowed;  // (layer, root-relative header)

  const layer* find(const std::string& name) const;
};

// Reads and merges tables (later files add to earlier ones); disk paths default to root/path.
// Errors name the table file and line.
std::expected<layer_table, std::string> layer_table_read(const std::vector<std::filesystem::path>& tables,
                                                         const std::filesystem::path& root);

// Problems with the table itself: unknown layer or third-party names, and cycles among 'uses'.
std::vector<std::string> layer_table_problems(const layer_table& table);

}  // namespace layer_check
