// Parsing and validation of loadgen's flags (see options_usage() for the list).
#include "loadgen/options.hpp"

#include <boost/asio/ip/address.hpp>

#include <charconv>
#include <cmath>
#include <functional>
#include <map>

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

using setter = std::function<std::optional<std::string>(options&, std::string_view)>;

template <typename T>
setter number(T options::*field, double lo, double hi) {
  return [=](options& o, std::string_view v) -> std::optional<std::string> {
    const auto d = to_double(v);
    if (!d || *d < lo || *d > hi) return "must be a number in " + std::to_string(lo) + ".." + std::to_string(hi);
    if constexpr (std::is_integral_v<T>) {
      if (*d != std::floor(*d)) return std::string("must be an integer");
    }
    o.*field = static_cast<T>(*d);
    return std::nullopt;
  };
}

setter text(std::string options::*field) {
  return [=](options& o, std::string_view v) -> std::optional<std::string> {
    o.*field = std::string(v);
    return std::nullopt;
  };
}

const std::map<std::string, setter, std::less<>>& value_flags() {
  static const std::map<std::string, setter, std::less<>> flags = {
      {"--target", [](options& o, std::string_view v) -> std::optional<std::string> {
         auto t = target_spec_parse(v);
         if (!t) return t.error();
         o.target = *t;
         return std::nullopt;
       }},
      {"--concurrency", [](options& o, std::string_view v) -> std::optional<std::string> {
         o.concurrency.clear();
         for (auto item : split(v, ',')) {
           const auto n = to_integer(item);
           if (!n || *n < 1 || *n > 4096) return "levels must be integers in 1..4096";
           o.concurrency.push_back(static_cast<int>(*n));
         }
         return std::nullopt;
       }},
      {"--rate", [](options& o, std::string_view v) -> std::optional<std::string> {
         o.rates.clear();
         for (auto item : split(v, ',')) {
           const auto r = to_double(item);
           if (!r || *r <= 0 || *r > 10000) return "rates must be requests per second in (0, 10000]";
           o.rates.push_back(*r);
         }
         return std::nullopt;
       }},
      {"--prompt-tokens", [](options& o, std::string_view v) -> std::optional<std::string> {
         auto l = length_spec_parse(v);
         if (!l) return l.error();
         o.prompt_tokens = *l;
         return std::nullopt;
       }},
      {"--max-tokens", [](options& o, std::string_view v) -> std::optional<std::string> {
         auto l = length_spec_parse(v);
         if (!l) return l.error();
         o.max_tokens = *l;
         return std::nullopt;
       }},
      {"--goodput", [](options& o, std::string_view v) -> std::optional<std::string> {
         auto s = slo_spec_parse(v);
         if (!s) return s.error();
         o.goodput = *s;
         return std::nullopt;
       }},
      {"--header", [](options& o, std::string_view v) -> std::optional<std::string> {
         const auto colon = v.find(':');
         std::string_view name = v.substr(0, colon), value;
         if (colon != std::string_view::npos) value = v.substr(colon + 1);
         while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
         const bool token = !name.empty() && name.find_first_of(" \t\r\n") == std::string_view::npos;
         if (colon == std::string_view::npos || !token || value.find_first_of("\r\n") != std::string_view::npos)
           return "use 'Name: value'";
         o.headers.emplace_back(std::string(name), std::string(value));
         return std::nullopt;
       }},
      {"--num-requests", number(&options::num_requests, 1, 100000)},
      {"--max-concurrency", number(&options::max_concurrency, 0, 4096)},
      {"--connections", number(&options::connections, 0, 1024)},
      {"--shared-prefix-tokens", number(&options::shared_prefix_tokens, 0, 100000)},
      {"--temperature", number(&options::temperature, 0, 10)},
      {"--seed", number(&options::seed, 0, 9.0e15)},
      {"--vocab-size", number(&options::vocab_size, 0, 10'000'000)},
      {"--soak-minutes", number(&options::soak_minutes, 0, 24 * 60)},
      {"--rss-bound-mb", number(&options::rss_bound_mb, 0, 1e6)},
      {"--cancel-fraction", number(&options::cancel_fraction, 0, 1)},
      {"--disconnect-fraction", number(&options::disconnect_fraction, 0, 1)},
      {"--soak-interval-s", number(&options::soak_interval_s, 0.5, 3600)},
      {"--timeout-s", number(&options::timeout_s, 0.1, 86400)},
      {"--level-timeout-s", number(&options::level_timeout_s, 1, 7 * 86400)},
      {"--tokenizer", text(&options::tokenizer_path)},
      {"--corpus", text(&options::corpus_path)},
      {"--model", text(&options::model_name)},
      {"--extra-body", text(&options::extra_body)},
      {"--out", text(&options::out_path)},
      {"--plot", text(&options::plot_path)},
      {"--label", text(&options::label)},
  };
  return flags;
}

void validate(options& o, std::vector<std::string>& errors) {
  if (o.compare) return;
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
}

}  // namespace

std::expected<options, std::vector<std::string>> options_parse(int argc, char** argv) {
  options o;
  std::vector<std::string> errors;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    bool has_value = false;
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    if (arg == "-h" || arg == "--help") {
      o.show_help = true;
      continue;
    }
    if (arg == "--ignore-eos" || arg == "--save-itl") {
      (arg == "--ignore-eos" ? o.ignore_eos : o.save_itl) = true;
      continue;
    }
    if (arg == "--compare") {
      if (i + 2 >= argc) {
        errors.push_back("--compare needs two result files");
        break;
      }
      o.compare = std::pair<std::string, std::string>(argv[i + 1], argv[i + 2]);
      i += 2;
      continue;
    }
    const auto it = value_flags().find(arg);
    if (it == value_flags().end()) {
      errors.push_back("unknown argument '" + std::string(arg) + "'");
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        errors.push_back(std::string(arg) + " needs a value");
        continue;
      }
      value = argv[++i];
    }
    if (auto problem = it->second(o, value)) errors.push_back(std::string(arg) + ": " + *problem);
  }
  if (o.show_help) return o;
  validate(o, errors);
  if (!errors.empty()) return std::unexpected(std::move(errors));
  return o;
}

std::string options_usage() {
  return R"(usage: loadgen --target URL [workload] [output]
       loadgen --compare A.json B.json [--plot FILE.png]

Drives a serving endpoint the way `vllm bench serve` does and reports its metrics.

target (loopback only):
  --target ws://127.0.0.1:P/v1/ws            pagedserve's WebSocket API
  --target http://127.0.0.1:P/v1/completions any OpenAI-compatible streaming completions endpoint
  --model NAME           "model" field of OpenAI requests (default: the first of GET /v1/models, else "default")
  --extra-body JSON      members added to OpenAI request bodies, e.g. '{"cache_prompt":false}'
  --header 'NAME: VALUE' sent with every WebSocket upgrade and HTTP request (repeatable), e.g.
                         'X-Session-Id: c1' to keep a run on one replica behind scripts/replicas.sh's nginx
load shape:
  --concurrency 1,4,16   closed-loop sweep: requests kept in flight per level (default 1)
  --rate R[,R2..]        open-loop sweep: Poisson arrivals, requests per second
  --max-concurrency N    open loop: cap on requests in flight (default none)
  --num-requests N       per level (default 2 x concurrency, min 4; rate: 20 s of arrivals, 10..1000)
  --connections N        WebSocket sockets per level (default one per concurrent request; requests share them)
workload:
  --prompt-tokens L      prompt length: N, uniform:A:B or normal:MEAN:STD (default 32); in tokens
                         (BOS included, exact) with --tokenizer, else in words
  --max-tokens L         output length, same forms (default 128)
  --ignore-eos           ask the server to ignore EOS, so outputs are exactly max_tokens long
  --temperature T        (default 0: greedy)
  --seed S               seeds lengths, arrivals, soak actions and each request's sampling seed (default 0)
  --tokenizer T.bin      llama2.c tokenizer: prompts of exact token length, unique per request
  --vocab-size N         of that tokenizer (default: counted from the file)
  --corpus FILE          text prompts are cut from (default: a built-in story text)
  --shared-prefix-tokens N  every prompt starts with the same N-token system prompt (prefix caching)
metrics and output:
  --goodput ttft:MS,tpot:MS,e2el:MS   SLOs for goodput (any subset)
  --out FILE.json        results: per level the vllm bench serve metrics and every request's record
  --save-itl             also keep each request's inter-token gaps in the JSON
  --plot FILE.png        throughput, TTFT and ITL against concurrency or rate (needs gnuplot)
  --label NAME           names this run in tables, plots and comparisons
  --compare A.json B.json  prints B/A ratios of two result files, level by level
soak mode:
  --soak-minutes M       M minutes of mixed load at the first concurrency level with random cancels and
                         disconnects, then checks GET /health: nothing running or waiting, every KV block
                         free, resident memory grown by at most --rss-bound-mb (default 256)
  --cancel-fraction F    share of soak requests cancelled at a random moment (default 0.1)
  --disconnect-fraction F  share whose socket is dropped at a random moment (default 0.05)
  --soak-interval-s S    report requests ended, errors, p99 latencies and GET /health (RSS, KV blocks
                         free) every S seconds of the soak (default 60)
bounds:
  --timeout-s S          one request, send to end (default 300)
  --level-timeout-s S    one level, wall clock (default 1800); what is still running then fails as timeout
exit status: 0 all requests completed (soak: all checks passed), 1 setup or I/O error, 2 bad usage,
             3 some requests failed (soak: a check failed)
)";
}

}  // namespace pagedserve::loadgen
