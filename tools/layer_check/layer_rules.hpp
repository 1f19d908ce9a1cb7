#pragma once
// The rules the build enforces on every file the table lists:
// - everything a file's translation unit reaches through our headers belongs to its own layer or
//   to one it uses, and every third-party header it reaches is one its layer may use (what separate
//   include paths per layer would enforce, which one shared /usr/include cannot);
// - our headers never include each other in a cycle.
// Allowed exceptions (table 'allow') stop the walk at the header they name. The layer cycles they
// close are notes; allow entries nothing needs any more are reported so the list gets emptied.
#include <string>
#include <vector>

#include "include_graph.hpp"
#include "layer_table.hpp"

namespace layer_check {

struct check_report {
  std::vector<std::string> errors;  // "path:line: error: ..." one per broken rule
  std::vector<std::string> notes;   // allowed exceptions in use and the layer cycles they close
  std::vector<std::string> stale;   // allow entries no file needs any more
};

check_report layer_rules_check(const layer_table& table, const include_graph& graph);

}  // namespace layer_check
