// layer_check: fails the build when a file includes what its layer may not (layer_rules.hpp).
//   layer_check --root <source dir> --table <table>... [--verbose] [--stamp <file>]
// Prints each broken rule as "path:line: error: ..." and exits 1, and warns of allow entries no file
// needs any more; with --verbose also the allowed exceptions in use and the layer cycles they close. --stamp is touched on success, so the
// build re-runs the check only when a file or the table changes.
#include <fstream>
#include <iostream>

#include "include_graph.hpp"
#include "layer_rules.hpp"
#include "layer_table.hpp"

int main(int argc, char** argv) {
  std::filesystem::path root, stamp;
  std::vector<std::filesystem::path> tables;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--verbose") verbose = true;
    else if (i + 1 < argc && arg == "--root") root = argv[++i];
    else if (i + 1 < argc && arg == "--table") tables.emplace_back(argv[++i]);
    else if (i + 1 < argc && arg == "--stamp") stamp = argv[++i];
    else {
      std::cerr << "usage: layer_check --root <dir> --table <file>... [--verbose] [--stamp <file>]\n";
      return 2;
    }
  }
  if (root.empty() || tables.empty()) {
    std::cerr << "layer_check: --root and at least one --table are required\n";
    return 2;
  }

  auto table = layer_check::layer_table_read(tables, root);
  if (!table) {
    std::cerr << "layer_check: " << table.error() << "\n";
    return 1;
  }
  if (auto problems = layer_check::layer_table_problems(*table); !problems.empty()) {
    for (const auto& p : problems) std::cerr << "layer_check: table: " << p << "\n";
    return 1;
  }
  const auto report = layer_check::layer_rules_check(*table, layer_check::include_graph_scan(*table, root));
  for (const auto& e : report.errors) std::cerr << e << "\n";
  for (const auto& s : report.stale) std::cout << "layer_check: warning: " << s << " (cmake/layer_table.cmake)\n";
  if (verbose)
    for (const auto& n : report.notes) std::cout << "layer_check: note: " << n << "\n";
  if (!report.errors.empty()) {
    std::cerr << "layer_check: " << report.errors.size() << " include(s) break the layer rules of "
              << tables.front().string() << " (written from cmake/layer_table.cmake)\n";
    return 1;
  }
  if (!stamp.empty()) std::ofstream(stamp) << "ok\n";
  return 0;
}
