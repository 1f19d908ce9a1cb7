// Parsing and validation of loadgen's flags (`loadgen --help` lists them).
#include "loadgen/options.hpp"

#include <boost/asio/ip/address.hpp>

#include <charconv>
#include <cmath>

namespace pagedserve::loadgen {

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const auto pos = s.find(sep);
    out.push_back(s.substr(0, pos));
    if (pos == std::string_view::npos) return out;
    s.remove_prefix(pos + 1);
  }
}

std::optional<double> to_double(std::string_view s) {
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<long long> to_integer(std::string_view s) {
  long long v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// Uniform double in [0, 1) from 53 random bits: the same on every standard library.
double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

int length_spec::sample(std::mt19937_64& rng) const {
  switch (shape) {
    case kind::fixed:
      return static_cast<int>(a);
    case kind::uniform: {
      const auto lo = static_cast<long long>(a), hi = static_cast<long long>(b);
      return static_cast<int>(lo + static_cast<long long>(unit(rng) * static_cast<double>(hi - lo + 1)));
    }
    case kind::normal: {
      // Box-Muller: written out so the draw does not depend on the library's normal_distribution.
      const double u1 = 1.0 - unit(rng), u2 = unit(rng);
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      return std::max(1, static_cast<int>(std::lround(a + b * z)));
    }
  }
  return 1;
}

int length_spec::max_value() const {
  switch (shape) {
    case kind::fixed: return static_cast<int>(a);
    case kind::uniform: return static_cast<int>(b);
    case kind::normal: return static_cast<int>(std::lround(a + 6 * b));
  }
  return 0;
}

std::expected<length_spec, std::string> length_spec_parse(std::string_view text) {
  const auto parts = split(text, ':');
  length_spec l;
  l.text = std::string(text);
  const auto bad = [&](std::string_view why) {
    return std::unexpected("bad length '" + std::string(text) + "': " + std::string(why) +
                           " (use N, uniform:A:B or normal:MEAN:STD)");
  };
  if (parts.size() == 1) {
    const auto v = to_integer(parts[0]);
    if (!v || *v < 1 || *v > 1'000'000) return bad("not an integer in 1..1000000");
    l.a = static_cast<double>(*v);
    return l;
  }
  if (parts.size() != 3) return bad("wrong number of fields");
  if (parts[0] == "uniform") {
    const auto lo = to_integer(parts[1]), hi = to_integer(parts[2]);
    if (!lo || !hi || *lo < 1 || *hi < *lo || *hi > 1'000'000) return bad("need integers 1 <= A <= B <= 1000000");
    l.shape = length_spec::kind::uniform;
    l.a = static_cast<double>(*lo);
    l.b = static_cast<double>(*hi);
    return l;
  }
  if (parts[0] == "normal") {
    const auto mean = to_double(parts[1]), sd = to_double(parts[2]);
    if (!mean || !sd || *mean < 1 || *sd < 0 || *mean + 6 * *sd > 1'000'000) return bad("need MEAN >= 1, STD >= 0");
    l.shape = length_spec::kind::normal;
    l.a = *mean;
    l.b = *sd;
    return l;
  }
  return bad("unknown distribution");
}

std::expected<target_spec, std::string> target_spec_parse(std::string_view url) {
  target_spec t;
  t.url = std::string(url);
  std::string_view rest = url;
  if (rest.starts_with("ws://")) {
    t.kind = target_spec::api::websocket;
    rest.remove_prefix(5);
  } else if (rest.starts_with("http://")) {
    t.kind = target_spec::api::openai_completions;
    rest.remove_prefix(7);
  } else {
    return std::unexpected("target '" + t.url + "' must start with ws:// or http:// (no TLS: loopback only)");
  }
  const auto slash = rest.find('/');
  t.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  std::string_view authority = rest.substr(0, slash);
  std::string_view port_text;
  if (authority.starts_with('[')) {  // [::1]:8080
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return std::unexpected("target '" + t.url + "': unclosed '['");
    t.host = std::string(authority.substr(1, close - 1));
    if (authority.size() > close + 1 && authority[close + 1] == ':') port_text = authority.substr(close + 2);
  } else {
    const auto colon = authority.rfind(':');
    t.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  const auto port = to_integer(port_text);
  if (!port || *port < 1 || *port > 65535) return std::unexpected("target '" + t.url + "' needs a port in 1..65535");
  t.port = static_cast<unsigned short>(*port);
  t.address = t.host == "localhost" ? "127.0.0.1" : t.host;
  boost::system::error_code ec;
  const auto addr = boost::asio::ip::make_address(t.address, ec);
  if (ec || !addr.is_loopback())
    return std::unexpected("target host '" + t.host + "' is not a loopback address (127.0.0.0/8, ::1 or localhost)");
  if (t.kind == target_spec::api::websocket && t.path == "/") t.path = "/v1/ws";
  if (t.kind == target_spec::api::openai_completions && t.path == "/") t.path = "/v1/completions";
  return t;
}

std::expected<slo_spec, std::string> slo_spec_parse(std::string_view text) {
  slo_spec s;
  for (auto item : split(text, ',')) {
    const auto colon = item.find(':');
    const auto value = colon == std::string_view::npos ? std::nullopt : to_double(item.substr(colon + 1));
    if (!value || *value <= 0) return std::unexpected("bad goodput SLO '" + std::string(item) + "' (use ttft:MS,tpot:MS,e2el:MS)");
    const auto name = item.substr(0, colon);
    if (name == "ttft") s.ttft_ms = *value;
    else if (name == "tpot") s.tpot_ms = *value;
    else if (name == "e2el") s.e2el_ms = *value;
    else return std::unexpected("unknown goodput metric '" + std::string(name) + "' (ttft, tpot or e2el)");
  }
  return s;
}

namespace {

// "1,4,16": levels, each checked by to_level; the whole list is one flag value, so a repeated flag
// replaces the list (as every other flag's last value wins).
template <class T, class ToLevel>
auto list_parser(ToLevel to_level, std::string what) {
  return [to_level, what](std::string_view text) -> std::expected<std::vector<T>, std::string> {
    std::vector<T> levels;
    for (auto item : split(text, ',')) {
      const auto level = to_level(item);
      if (!level) return std::unexpected(what);
      levels.push_back(*level);
    }
    return levels;
  };
}

std::expected<std::pair<std::string, std::string>, std::string> header_parse(std::string_view v) {
  const auto colon = v.find(':');
  std::string_view name = v.substr(0, colon), value;
  if (colon != std::string_view::npos) value = v.substr(colon + 1);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  const bool token = !name.empty() && name.find_first_of(" \t\r\n") == std::string_view::npos;
  if (colon == std::string_view::npos || !token || value.find_first_of("\r\n") != std::string_view::npos)
    return std::unexpected("use 'Name: value', not '" + std::string(v) + "'");
  return std::pair<std::string, std::string>(name, value);
}

std::vector<std::string> validate(options& o) {
  std::vector<std::string> errors;
  if (o.compare) return errors;
  if (o.target.url.empty()) errors.push_back("--target is required (ws://127.0.0.1:PORT/v1/ws or http://127.0.0.1:PORT/v1/completions)");
  if (!o.concurrency.empty() && !o.rates.empty()) errors.push_back("give --concurrency or --rate, not both");
  if (o.concurrency.empty() && o.rates.empty()) o.concurrency = {1};
  if (o.prompt_tokens.text.empty()) o.prompt_tokens = *length_spec_parse("32");
  if (o.max_tokens.text.empty()) o.max_tokens = *length_spec_parse("128");
  if (o.shared_prefix_tokens > 0 && o.shared_prefix_tokens >= o.prompt_tokens.max_value())
    errors.push_back("--shared-prefix-tokens must be smaller than the prompt length");
  if (o.shared_prefix_tokens > 0 && o.tokenizer_path.empty())
    errors.push_back("--shared-prefix-tokens needs --tokenizer (token-exact prompts)");
  if (o.cancel_fraction + o.disconnect_fraction > 1) errors.push_back("--cancel-fraction + --disconnect-fraction must be <= 1");
  if (!o.extra_body.empty() && (o.extra_body.front() != '{' || o.extra_body.back() != '}'))
    errors.push_back("--extra-body must be a JSON object, e.g. '{\"cache_prompt\":false}'");
  if (o.soak_minutes > 0 && !o.rates.empty()) errors.push_back("--soak-minutes runs at the first --concurrency level, not at a --rate");
  return errors;
}

void define_target(CLI::App& app, options& o) {
  cli_add_parsed(app, "--target", o.target, target_spec_parse,
                 "ws://127.0.0.1:P/v1/ws (pagedserve's WebSocket API) or http://127.0.0.1:P/v1/completions (any "
                 "OpenAI-compatible streaming completions endpoint); loopback only")
      ->type_name("URL")
      ->group("Target");
  app.add_option("--model", o.model_name, "\"model\" field of OpenAI requests (default: the first of GET /v1/models, else \"default\")")
      ->type_name("NAME")
      ->group("Target");
  app.add_option("--extra-body", o.extra_body, "members added to OpenAI request bodies, e.g. '{\"cache_prompt\":false}'")
      ->type_name("JSON")
      ->group("Target");
  app.add_option_function<std::vector<std::string>>(
         "--header",
         [&o](const std::vector<std::string>& texts) {
           for (const std::string& t : texts) {
             auto h = header_parse(t);
             if (!h) throw CLI::ValidationError("--header", h.error());
             o.headers.push_back(std::move(*h));
           }
         },
         "sent with every WebSocket upgrade and HTTP request (repeatable), e.g. 'X-Session-Id: c1' to keep a run on "
         "one replica behind scripts/replicas.sh's nginx")
      ->type_name("'NAME: VALUE'")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false)
      ->group("Target");
}

void define_load_shape(CLI::App& app, options& o) {
  cli_add_parsed(app, "--concurrency", o.concurrency,
                 list_parser<int>([](std::string_view t) -> std::optional<int> {
                   const auto n = to_integer(t);
                   return n && *n >= 1 && *n <= 4096 ? std::optional<int>(static_cast<int>(*n)) : std::nullopt;
                 }, "levels must be integers in 1..4096"),
                 "closed-loop sweep: requests kept in flight per level (default 1)")
      ->type_name("N[,N2..]")
      ->group("Load shape");
  cli_add_parsed(app, "--rate", o.rates,
                 list_parser<double>([](std::string_view t) -> std::optional<double> {
                   const auto r = to_double(t);
                   return r && *r > 0 && *r <= 10000 ? r : std::nullopt;
                 }, "rates must be requests per second in (0, 10000]"),
                 "open-loop sweep: Poisson arrivals, requests per second")
      ->type_name("R[,R2..]")
      ->group("Load shape");
  app.add_option("--max-concurrency", o.max_concurrency, "open loop: cap on requests in flight (0 = none)")
      ->check(CLI::Range(0, 4096))
      ->group("Load shape");
  app.add_option("--num-requests", o.num_requests,
                 "per level (default 2 x concurrency, min 4; rate: 20 s of arrivals, 10..1000)")
      ->check(CLI::Range(1, 100000))
      ->default_str("")
      ->group("Load shape");
  app.add_option("--connections", o.connections,
                 "WebSocket sockets per level (0 = one per concurrent request; requests share them)")
      ->check(CLI::Range(0, 1024))
      ->group("Load shape");
}

void define_workload(CLI::App& app, options& o) {
  cli_add_parsed(app, "--prompt-tokens", o.prompt_tokens, length_spec_parse,
                 "prompt length: N, uniform:A:B or normal:MEAN:STD (default 32); in tokens (BOS included, exact) "
                 "with --tokenizer, else in words")
      ->type_name("L")
      ->group("Workload");
  cli_add_parsed(app, "--max-tokens", o.max_tokens, length_spec_parse, "output length, same forms (default 128)")
      ->type_name("L")
      ->group("Workload");
  app.add_flag("--ignore-eos", o.ignore_eos, "ask the server to ignore EOS, so outputs are exactly max_tokens long")
      ->group("Workload");
  app.add_option("--temperature", o.temperature, "0 = greedy")->check(CLI::Range(0.0, 10.0))->group("Workload");
  app.add_option("--seed", o.seed, "seeds lengths, arrivals, soak actions and each request's sampling seed")
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{9'000'000'000'000'000}))
      ->group("Workload");
  app.add_option("--tokenizer", o.tokenizer_path, "a tokenizer (llama2.c tokenizer.bin, a GGUF's, tokenizer.json or its folder): prompts of exact token length, unique per request")
      ->type_name("T.bin")
      ->group("Workload");
  app.add_option("--vocab-size", o.vocab_size, "of that tokenizer (0 = counted from the file)")
      ->check(CLI::Range(0, 10'000'000))
      ->group("Workload");
  app.add_option("--corpus", o.corpus_path, "text prompts are cut from (default: a built-in story text)")
      ->type_name("FILE")
      ->group("Workload");
  app.add_option("--shared-prefix-tokens", o.shared_prefix_tokens,
                 "every prompt starts with the same N-token system prompt (prefix caching)")
      ->check(CLI::Range(0, 100000))
      ->group("Workload");
}

void define_output(CLI::App& app, options& o) {
  cli_add_parsed(app, "--goodput", o.goodput, slo_spec_parse, "SLOs for goodput (any subset)")
      ->type_name("ttft:MS,tpot:MS,e2el:MS")
      ->group("Metrics and output");
  app.add_option("--out", o.out_path, "results: per level the vllm bench serve metrics and every request's record")
      ->type_name("FILE.json")
      ->group("Metrics and output");
  app.add_flag("--save-itl", o.save_itl, "also keep each request's inter-token gaps in the JSON")
      ->group("Metrics and output");
  app.add_option("--plot", o.plot_path, "throughput, TTFT and ITL against concurrency or rate (needs gnuplot)")
      ->type_name("FILE.png")
      ->group("Metrics and output");
  app.add_option("--label", o.label, "names this run in tables, plots and comparisons")
      ->type_name("NAME")
      ->group("Metrics and output");
  app.add_option_function<std::vector<std::string>>(
         "--compare",
         [&o](const std::vector<std::string>& files) {
           if (files.size() != 2) throw CLI::ValidationError("--compare", "needs two result files");
           o.compare = {files[0], files[1]};
         },
         "prints B/A ratios of two result files, level by level")
      ->expected(2)
      ->allow_extra_args(false)
      ->type_name("A.json B.json")
      ->group("Metrics and output");
}

void define_soak_and_bounds(CLI::App& app, options& o) {
  app.add_option("--soak-minutes", o.soak_minutes,
                 "M minutes of mixed load at the first concurrency level with random cancels and disconnects, then "
                 "checks GET /health: nothing running or waiting, every KV block free, resident memory grown by at "
                 "most --rss-bound-mb")
      ->check(CLI::Range(0.0, 24.0 * 60))
      ->group("Soak mode");
  app.add_option("--rss-bound-mb", o.rss_bound_mb, "allowed growth of the server's resident memory")
      ->check(CLI::Range(0.0, 1e6))
      ->group("Soak mode");
  app.add_option("--cancel-fraction", o.cancel_fraction, "share of soak requests cancelled at a random moment")
      ->check(CLI::Range(0.0, 1.0))
      ->group("Soak mode");
  app.add_option("--disconnect-fraction", o.disconnect_fraction, "share whose socket is dropped at a random moment")
      ->check(CLI::Range(0.0, 1.0))
      ->group("Soak mode");
  app.add_option("--soak-interval-s", o.soak_interval_s,
                 "report requests ended, errors, p99 latencies and GET /health (RSS, KV blocks free) every S seconds")
      ->check(CLI::Range(0.5, 3600.0))
      ->group("Soak mode");
  app.add_option("--timeout-s", o.timeout_s, "one request, send to end")->check(CLI::Range(0.1, 86400.0))->group("Bounds");
  app.add_option("--level-timeout-s", o.level_timeout_s,
                 "one level, wall clock; what is still running then fails as timeout")
      ->check(CLI::Range(1.0, 7.0 * 86400))
      ->group("Bounds");
}

}  // namespace

void options_define(CLI::App& app, options& o) {
  cli_app_setup(app,
                "exit status: 0 all requests completed (soak: all checks passed), 1 setup or I/O error, 2 bad usage,\n"
                "             3 some requests failed (soak: a check failed)");
  app.description(
      "Drives a serving endpoint the way `vllm bench serve` does and reports its metrics.\n"
      "  loadgen --target URL [workload] [output]\n"
      "  loadgen --compare A.json B.json [--plot FILE.png]");
  define_target(app, o);
  define_load_shape(app, o);
  define_workload(app, o);
  define_output(app, o);
  define_soak_and_bounds(app, o);
  app.callback([&o] { cli_throw_if_any(validate(o)); });
}

std::expected<options, cli_stop> options_parse(int argc, const char* const* argv) {
  options o;
  CLI::App app("", "loadgen");
  options_define(app, o);
  if (auto stop = cli_app_parse(app, argc, argv)) return std::unexpected(std::move(*stop));
  return o;
}

}  // namespace pagedserve::loadgen
