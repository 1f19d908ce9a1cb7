// loadgen: drives a serving endpoint (pagedserve's WebSocket API or an OpenAI-compatible
// streaming /v1/completions) the way `vllm bench serve` does, and reports its metrics.
// Usage: `loadgen --help` (every flag: loadgen/options.cpp).
#include <cstdio>
#include <fstream>
#include <sstream>

#include "loadgen/health.hpp"
#include "loadgen/metrics.hpp"
#include "loadgen/options.hpp"
#include "loadgen/plot.hpp"
#include "loadgen/report.hpp"
#include "loadgen/runner.hpp"
#include "loadgen/soak.hpp"
#include "tokenizer/hf_tokenizer.hpp"
#include "loadgen/workload.hpp"

using namespace pagedserve;
using namespace pagedserve::loadgen;

namespace {

void plot_if_asked(const options& o, const std::vector<result_set>& runs) {
  if (o.plot_path.empty()) return;
  if (auto drawn = plot_write(runs, o.plot_path); !drawn) std::fprintf(stderr, "loadgen: warning: %s\n", drawn.error().c_str());
  else std::printf("plot: %s\n", o.plot_path.c_str());
}

int run_compare(const options& o) {
  auto a = result_set_load(o.compare->first);
  auto b = result_set_load(o.compare->second);
  if (!a || !b) {
    std::fprintf(stderr, "loadgen: %s\n", (!a ? a.error() : b.error()).c_str());
    return 1;
  }
  const int status = compare_print(stdout, *a, *b);
  if (status == 0) plot_if_asked(o, {*a, *b});
  return status;
}

std::expected<prompt_builder, std::string> prompts_make(const options& o) {
  std::string corpus(builtin_corpus());
  if (!o.corpus_path.empty()) {
    std::ifstream f(o.corpus_path, std::ios::binary);
    if (!f) return std::unexpected("cannot read corpus '" + o.corpus_path + "'");
    std::ostringstream text;
    text << f.rdbuf();
    corpus = text.str();
  }
  std::shared_ptr<const tokenizer> tok;
  if (!o.tokenizer_path.empty()) {  // a llama2.c tokenizer.bin, a GGUF's embedded one, or a tokenizer.json
    auto loaded = tokenizer_load_any(o.tokenizer_path, o.vocab_size);
    if (!loaded) return std::unexpected("cannot load tokenizer: " + loaded.error());
    tok = std::move(*loaded);
  }
  return prompt_builder::make(std::move(corpus), std::move(tok), o.shared_prefix_tokens);
}

int level_requests(const options& o, int concurrency, double rate) {
  if (o.num_requests > 0) return o.num_requests;
  if (concurrency > 0) return std::max(4, 2 * concurrency);
  return std::clamp(static_cast<int>(rate * 20), 10, 1000);
}

int run_sweep(const options& o, const prompt_builder& prompts) {
  std::vector<std::pair<int, double>> levels;
  for (const int c : o.concurrency) levels.emplace_back(c, 0.0);
  for (const double r : o.rates) levels.emplace_back(0, r);
  std::vector<level_result> results;
  std::vector<level_summary> summaries;
  std::printf("target %s%s%s\n", o.target.url.c_str(), o.label.empty() ? "" : "  label ", o.label.c_str());
  table_header(stdout, o.rates.empty() ? "concurrency" : "rate");
  int first_index = 0;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const auto [concurrency, rate] = levels[i];
    const int n = level_requests(o, concurrency, rate);
    auto specs = workload_make(o, prompts, static_cast<int>(i), first_index, n, rate);
    if (!specs) {
      std::fprintf(stderr, "loadgen: %s\n", specs.error().c_str());
      return 1;
    }
    first_index += n;
    results.push_back(level_run(o, concurrency, rate, *specs));
    summaries.push_back(level_summarize(results.back(), o.goodput));
    table_row(stdout, summaries.back());
  }
  if (!o.out_path.empty()) {
    if (auto written = file_write(o.out_path, results_json(o, results, summaries)); !written) {
      std::fprintf(stderr, "loadgen: %s\n", written.error().c_str());
      return 1;
    }
    std::printf("results: %s\n", o.out_path.c_str());
  }
  plot_if_asked(o, {result_set_of(o, summaries)});
  bool any_failed = false;
  for (const auto& s : summaries) any_failed = any_failed || s.failed > 0 || !s.error.empty();
  return any_failed ? 3 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = options_parse(argc, argv);
  if (!parsed) return cli_stop_print(parsed.error());
  const options& o = *parsed;
  if (o.compare) return run_compare(o);
  options run_options = o;
  if (o.target.kind == target_spec::api::openai_completions && o.model_name.empty())
    run_options.model_name = openai_first_model(o.target).value_or("default");
  auto prompts = prompts_make(o);
  if (!prompts) {
    std::fprintf(stderr, "loadgen: %s\n", prompts.error().c_str());
    return 1;
  }
  return o.soak_minutes > 0 ? soak_run(run_options, *prompts) : run_sweep(run_options, *prompts);
}
