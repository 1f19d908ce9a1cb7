#pragma once
// What a run leaves behind: the results JSON (per level the vllm bench serve metrics plus every
// request's record), the table on stdout, and --compare's ratio table of two result files.
#include <cstdio>
#include <expected>
#include <map>
#include <string>
#include <vector>

#include "loadgen/metrics.hpp"
#include "loadgen/options.hpp"
#include "loadgen/runner.hpp"

namespace pagedserve::loadgen {

// A results file read back (or a run just made): enough to print, compare and plot.
struct result_set {
  std::string label;
  std::string mode;  // "concurrency" or "rate": what the levels' x is
  std::vector<std::map<std::string, double>> levels;  // level_summary_fields() names
};

// The results JSON of a sweep.
std::string results_json(const options& o, const std::vector<level_result>& levels,
                         const std::vector<level_summary>& summaries);
// One request's record as a JSON object (also used by the soak report).
std::string request_json(const request_record& rec, clock_type::time_point level_start, bool with_itl);

result_set result_set_of(const options& o, const std::vector<level_summary>& summaries);
std::expected<result_set, std::string> result_set_load(const std::string& path);

void table_header(std::FILE* out, const std::string& mode);
void table_row(std::FILE* out, const level_summary& s);

// --compare: B/A ratios level by level; returns the process exit status.
int compare_print(std::FILE* out, const result_set& a, const result_set& b);

// Writes text to path; an error message on failure.
std::expected<void, std::string> file_write(const std::string& path, const std::string& text);

}  // namespace pagedserve::loadgen
