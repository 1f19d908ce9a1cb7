#pragma once
// loadgen's command line: what to load, how hard, and where the results go. Parsed (CLI11, one
// definition per flag for parsing and --help) and validated once; the rest of loadgen reads this
// struct by const&.
#include <cstdint>
#include <expected>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/cli_app.hpp"

namespace pagedserve::loadgen {

// A length drawn per request: fixed N, uniform:A:B (inclusive) or normal:MEAN:STD (rounded,
// clamped to >= 1). Drawn with loadgen's own arithmetic so a seed gives the same run everywhere.
struct length_spec {
  enum class kind { fixed, uniform, normal };
  kind shape = kind::fixed;
  double a = 0;  // fixed value, uniform low or normal mean
  double b = 0;  // uniform high or normal standard deviation
  std::string text;

  int sample(std::mt19937_64& rng) const;
  int max_value() const;  // an upper bound of sample(): for validation
};
std::expected<length_spec, std::string> length_spec_parse(std::string_view text);

// The endpoint under load. Loopback only: loadgen is a measuring instrument, not a load cannon.
struct target_spec {
  enum class api { websocket, openai_completions };
  api kind = api::websocket;
  std::string host;  // as given (numeric or "localhost")
  std::string address;  // numeric loopback address to connect to
  unsigned short port = 0;
  std::string path;  // e.g. /v1/ws or /v1/completions
  std::string url;   // the whole --target text
};
std::expected<target_spec, std::string> target_spec_parse(std::string_view url);

// SLOs for goodput (vllm bench serve --goodput): a request is good when it meets all that are set.
struct slo_spec {
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};
std::expected<slo_spec, std::string> slo_spec_parse(std::string_view text);

struct options {
  target_spec target;
  std::vector<int> concurrency;  // closed-loop sweep levels (requests in flight)
  std::vector<double> rates;     // open-loop Poisson sweep levels, requests per second
  int num_requests = 0;          // per level; 0 = 2 x concurrency (min 4), or 20 s of arrivals at the rate
  int max_concurrency = 0;       // open loop: cap on requests in flight; 0 = none
  int connections = 0;           // WebSocket sockets per level; 0 = one per concurrent request (max 64 in rate mode)
  length_spec prompt_tokens;     // prompt length in tokens (BOS included) with --tokenizer, else in words
  length_spec max_tokens;        // max_tokens of each request
  int shared_prefix_tokens = 0;  // a common system prompt of this many tokens heads every prompt
  bool ignore_eos = false;
  double temperature = 0;
  std::uint64_t seed = 0;
  std::string tokenizer_path;    // llama2.c tokenizer .bin: prompts of exact token lengths
  int vocab_size = 0;            // of the tokenizer; 0 = counted from the file
  std::string corpus_path;       // text to cut prompts from; empty = the built-in corpus
  std::string model_name;        // "model" of OpenAI requests; empty = the first of GET /v1/models, else "default"
  std::string extra_body;        // a JSON object whose members are added to OpenAI request bodies
  // --header "Name: value" (repeatable): sent with every WebSocket upgrade and HTTP request, e.g.
  // X-Session-Id for a load balancer's session affinity.
  std::vector<std::pair<std::string, std::string>> headers;
  slo_spec goodput;
  std::string out_path;          // results JSON
  std::string plot_path;         // PNG drawn with gnuplot
  std::string label;             // names this run in tables, plots and comparisons
  std::optional<std::pair<std::string, std::string>> compare;  // --compare A.json B.json
  double soak_minutes = 0;       // > 0: soak mode instead of a sweep
  double rss_bound_mb = 256;     // soak: allowed growth of the server's resident memory
  double cancel_fraction = 0.1;  // soak: requests cancelled at a random moment
  double disconnect_fraction = 0.05;  // soak: requests whose socket is dropped at a random moment
  double soak_interval_s = 60;   // soak: width of the over-time report (latency, errors, /health)
  double timeout_s = 300;        // one request, from send to its end
  double level_timeout_s = 1800; // one sweep level (or the soak's drain), wall clock
  bool save_itl = false;         // keep every request's inter-token gaps in the JSON
};

// Sets app up (cli_app_setup) with every loadgen flag, bound to o; its callback validates the
// combination and fills the defaults that depend on other flags.
void options_define(CLI::App& app, options& o);
// Parses a whole command line (argv[0] included): the options, or why the program stops here.
std::expected<options, cli_stop> options_parse(int argc, const char* const* argv);

}  // namespace pagedserve::loadgen
