// gnuplot plots (plot.hpp).
#include "loadgen/plot.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace pagedserve::loadgen {

namespace {

double get(const std::map<std::string, double>& m, const char* k) {
  const auto it = m.find(k);
  return it == m.end() ? 0.0 : it->second;
}

// A gnuplot string literal (single quotes; a quote is doubled).
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

}  // namespace

bool gnuplot_available() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((std::filesystem::path(dir) / "gnuplot").c_str(), X_OK) == 0) return true;
  return false;
}

std::string plot_script(const std::vector<result_set>& runs, const std::string& png) {
  const bool by_rate = !runs.empty() && runs.front().mode == "rate";
  const char* x = by_rate ? "request_rate" : "concurrency";
  std::ostringstream s;
  // Columns: x, out tok/s, req/s, TTFT p50 p90 p99, ITL p50 p90 p99, TPOT p50 p99, E2EL p50.
  static const char* cols[] = {"output_throughput", "request_throughput", "median_ttft_ms", "p90_ttft_ms",
                               "p99_ttft_ms",       "median_itl_ms",      "p90_itl_ms",     "p99_itl_ms",
                               "median_tpot_ms",    "p99_tpot_ms",        "median_e2el_ms"};
  for (std::size_t r = 0; r < runs.size(); ++r) {
    s << "$run" << r << " << EOD\n";
    for (const auto& level : runs[r].levels) {
      s << get(level, x);
      for (const char* c : cols) s << ' ' << get(level, c);
      s << '\n';
    }
    s << "EOD\n";
  }
  std::string title = runs.size() == 1 ? runs.front().label : "comparison";
  s << "set terminal pngcairo size 1400,1000 font ',10'\n";
  s << "set output " << quoted(png) << "\n";
  s << "set multiplot layout 2,2 title " << quoted(title) << "\n";
  s << "set grid\nset key top left\nset pointsize 1.2\n";
  s << "set xlabel " << quoted(by_rate ? "request rate (req/s)" : "concurrency (requests in flight)") << "\n";
  if (!by_rate) s << "set logscale x 2\n";
  const auto panel = [&](const char* title_text, const char* ylabel, std::vector<std::pair<int, const char*>> series,
                         bool log_y) {
    s << "set title " << quoted(title_text) << "\nset ylabel " << quoted(ylabel) << "\n";
    s << (log_y ? "set logscale y 10\nset autoscale y\n" : "unset logscale y\nset yrange [0:*]\n");
    s << "plot ";
    bool first = true;
    for (std::size_t r = 0; r < runs.size(); ++r) {
      for (std::size_t k = 0; k < series.size(); ++k) {
        if (!first) s << ", ";
        first = false;
        const std::string name = (runs.size() > 1 ? runs[r].label + " " : std::string()) + series[k].second;
        s << "$run" << r << " using 1:" << series[k].first << " with linespoints lc " << (r + 1) << " dt " << (k + 1)
          << " pt " << (7 + static_cast<int>(k)) << " title " << quoted(name);
      }
    }
    s << "\n";
  };
  panel("output throughput", "tokens/s", {{2, "output tok/s"}}, false);
  panel("time to first token", "ms", {{4, "p50"}, {5, "p90"}, {6, "p99"}}, true);
  panel("inter-token latency", "ms", {{7, "p50"}, {8, "p90"}, {9, "p99"}}, true);
  panel("time per output token and end-to-end latency", "ms", {{10, "TPOT p50"}, {11, "TPOT p99"}, {12, "E2EL p50"}}, true);
  s << "unset multiplot\nset output\n";
  return s.str();
}

std::expected<void, std::string> plot_write(const std::vector<result_set>& runs, const std::string& png) {
  if (!gnuplot_available()) return std::unexpected("gnuplot is not installed (apt-get install gnuplot-nox): no plot drawn");
  if (runs.empty() || runs.front().levels.empty()) return std::unexpected("nothing to plot");
  FILE* pipe = ::popen("gnuplot", "w");
  if (!pipe) return std::unexpected("cannot start gnuplot");
  const std::string script = plot_script(runs, png);
  std::fwrite(script.data(), 1, script.size(), pipe);
  const int status = ::pclose(pipe);
  if (status != 0) return std::unexpected("gnuplot failed (exit status " + std::to_string(WEXITSTATUS(status)) + ")");
  return {};
}

}  // namespace pagedserve::loadgen
