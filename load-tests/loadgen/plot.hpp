#pragma once
// A PNG per sweep, drawn by gnuplot (Debian's gnuplot-nox) through a pipe: output throughput,
// TTFT, ITL and TPOT percentiles against concurrency or rate, one line set per run.
#include <expected>
#include <string>
#include <vector>

#include "loadgen/report.hpp"

namespace pagedserve::loadgen {

// True when a gnuplot executable is on PATH.
bool gnuplot_available();
// The gnuplot script (data inline) that draws runs into png: exposed for tests.
std::string plot_script(const std::vector<result_set>& runs, const std::string& png);
// Draws the plot; an error when gnuplot is missing or fails.
std::expected<void, std::string> plot_write(const std::vector<result_set>& runs, const std::string& png);

}  // namespace pagedserve::loadgen
