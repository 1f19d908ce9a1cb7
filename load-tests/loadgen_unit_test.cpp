// loadgen's pure parts: flag parsing, SSE framing, statistics, prompt building, JSON and plot text.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <unistd.h>

#include <filesystem>
#include <set>

#include "loadgen/json_writer.hpp"
#include "loadgen/metrics.hpp"
#include "loadgen/options.hpp"
#include "loadgen/plot.hpp"
#include "loadgen/sse_parser.hpp"
#include "loadgen/workload.hpp"
#include "support/cli_help_check.hpp"
#include "support/test_paths.hpp"
#include "model/gguf_model.hpp"
#include "model/gguf_random_model.hpp"

namespace pagedserve::loadgen {
namespace {

TEST(LoadgenOptions, TargetsAreLoopbackOnly) {
  auto t = target_spec_parse("ws://127.0.0.1:8080/v1/ws");
  ASSERT_TRUE(t) << t.error();
  EXPECT_EQ(t->kind, target_spec::api::websocket);
  EXPECT_EQ(t->port, 8080);
  EXPECT_EQ(t->path, "/v1/ws");
  t = target_spec_parse("http://localhost:9000");
  ASSERT_TRUE(t) << t.error();
  EXPECT_EQ(t->kind, target_spec::api::openai_completions);
  EXPECT_EQ(t->address, "127.0.0.1");
  EXPECT_EQ(t->path, "/v1/completions");
  EXPECT_TRUE(target_spec_parse("http://[::1]:9000/v1/completions"));
  EXPECT_TRUE(target_spec_parse("ws://127.3.4.5:1/v1/ws"));
  EXPECT_FALSE(target_spec_parse("ws://192.168.1.2:8080/v1/ws"));
  EXPECT_FALSE(target_spec_parse("http://example.com:80/v1/completions"));
  EXPECT_FALSE(target_spec_parse("https://127.0.0.1:443/v1/completions"));
  EXPECT_FALSE(target_spec_parse("ws://127.0.0.1/v1/ws"));  // no port
}

TEST(LoadgenOptions, LengthsAreSeededAndBounded) {
  auto fixed = length_spec_parse("101");
  ASSERT_TRUE(fixed);
  std::mt19937_64 rng(1);
  EXPECT_EQ(fixed->sample(rng), 101);
  auto uni = length_spec_parse("uniform:10:20");
  ASSERT_TRUE(uni);
  std::mt19937_64 a(7), b(7);
  for (int i = 0; i < 1000; ++i) {
    const int x = uni->sample(a);
    EXPECT_GE(x, 10);
    EXPECT_LE(x, 20);
    EXPECT_EQ(x, uni->sample(b));
  }
  auto normal = length_spec_parse("normal:50:10");
  ASSERT_TRUE(normal);
  double sum = 0;
  for (int i = 0; i < 4000; ++i) sum += normal->sample(a);
  EXPECT_NEAR(sum / 4000, 50, 1.5);
  EXPECT_FALSE(length_spec_parse("0"));
  EXPECT_FALSE(length_spec_parse("uniform:20:10"));
  EXPECT_FALSE(length_spec_parse("zipf:1:2"));
}

TEST(LoadgenOptions, GoodputAndSweepFlags) {
  auto slo = slo_spec_parse("ttft:500,tpot:50");
  ASSERT_TRUE(slo);
  EXPECT_EQ(slo->ttft_ms, 500);
  EXPECT_EQ(slo->tpot_ms, 50);
  EXPECT_FALSE(slo->e2el_ms);
  EXPECT_FALSE(slo_spec_parse("latency:5"));
  std::vector<std::string> args = {"loadgen", "--target=ws://127.0.0.1:1/v1/ws", "--concurrency", "1,4,16",
                                   "--rate", "2"};
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  auto o = options_parse(static_cast<int>(argv.size()), argv.data());
  ASSERT_FALSE(o) << "--concurrency and --rate together must be refused";
  args.resize(4);
  argv.clear();
  for (auto& s : args) argv.push_back(s.data());
  o = options_parse(static_cast<int>(argv.size()), argv.data());
  ASSERT_TRUE(o);
  EXPECT_EQ(o->concurrency, (std::vector<int>{1, 4, 16}));
}

TEST(LoadgenOptions, HeadersAreNameColonValue) {
  const char* argv[] = {"loadgen", "--target", "ws://127.0.0.1:8000/v1/ws", "--header", "X-Session-Id: c1",
                        "--header=X-Other:2"};
  auto o = options_parse(6, const_cast<char**>(argv));
  ASSERT_TRUE(o) << o.error().text;
  ASSERT_EQ(o->headers.size(), 2u);
  EXPECT_EQ(o->headers[0], (std::pair<std::string, std::string>{"X-Session-Id", "c1"}));
  EXPECT_EQ(o->headers[1], (std::pair<std::string, std::string>{"X-Other", "2"}));
  for (const char* bad : {"no-colon", ": empty-name", "Bad Name: x"}) {
    const char* argv_bad[] = {"loadgen", "--target", "ws://127.0.0.1:8000/v1/ws", "--header", bad};
    EXPECT_FALSE(options_parse(5, const_cast<char**>(argv_bad))) << bad;
  }
}

std::expected<options, cli_stop> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "loadgen");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return options_parse(static_cast<int>(argv.size()), argv.data());
}

TEST(LoadgenOptions, ValuesFollowASpaceOrAnEqualsSign) {
  for (const auto& args : {std::vector<std::string>{"--target", "http://127.0.0.1:9/v1/completions", "--num-requests", "7",
                                                    "--max-tokens", "uniform:2:4", "--seed", "5", "--ignore-eos"},
                           std::vector<std::string>{"--target=http://127.0.0.1:9/v1/completions", "--num-requests=7",
                                                    "--max-tokens=uniform:2:4", "--seed=5", "--ignore-eos"}}) {
    auto o = parse(args);
    ASSERT_TRUE(o) << o.error().text;
    EXPECT_EQ(o->target.port, 9);
    EXPECT_EQ(o->num_requests, 7);
    EXPECT_EQ(o->max_tokens.shape, length_spec::kind::uniform);
    EXPECT_EQ(o->seed, 5u);
    EXPECT_TRUE(o->ignore_eos);
    EXPECT_EQ(o->concurrency, std::vector<int>{1}) << "the default level";
    EXPECT_EQ(o->prompt_tokens.text, "32") << "the default prompt length";
  }
  auto last = parse({"--target", "ws://127.0.0.1:1/v1/ws", "--concurrency", "1,2", "--concurrency=8"});
  ASSERT_TRUE(last) << last.error().text;
  EXPECT_EQ(last->concurrency, std::vector<int>{8}) << "a repeated flag's last value wins";
  auto compare = parse({"--compare", "a.json", "b.json", "--plot=c.png"});
  ASSERT_TRUE(compare) << compare.error().text;
  EXPECT_EQ(compare->compare, (std::pair<std::string, std::string>{"a.json", "b.json"}));
  EXPECT_EQ(compare->plot_path, "c.png");
}

TEST(LoadgenOptions, BadValuesAndUnknownFlagsNameTheFlag) {
  for (const auto& [args, flag] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--target", "ws://127.0.0.1:1/v1/ws", "--num-requests", "0"}, "--num-requests"},
           {{"--target", "ws://127.0.0.1:1/v1/ws", "--num-requests=many"}, "--num-requests"},
           {{"--target", "ws://127.0.0.1:1/v1/ws", "--concurrency", "0"}, "--concurrency"},
           {{"--target", "ws://127.0.0.1:1/v1/ws", "--cancel-fraction", "2"}, "--cancel-fraction"},
           {{"--target", "ws://127.0.0.1:1/v1/ws", "--prompt-tokens", "zipf:1:2"}, "--prompt-tokens"},
           {{"--target", "ws://127.0.0.1:1/v1/ws", "--seed", "-1"}, "--seed"},
           {{"--target", "ws://127.0.0.1:1/v1/ws", "--concurrency", "1", "4"}, "4"},
           {{"--target", "ws://127.0.0.1:1/v1/ws", "--timeout"}, "--timeout"},
           {{"--target", "ws://127.0.0.1:1/v1/ws", "--compare", "a.json"}, "--compare"},
           {{"--target", "ws://10.0.0.1:1/v1/ws"}, "--target"},
           {{"--concurrency", "4"}, "--target"}}) {
    auto o = parse(args);
    ASSERT_FALSE(o) << flag;
    EXPECT_EQ(o.error().status, 2) << flag;
    EXPECT_NE(o.error().text.find(flag), std::string::npos) << o.error().text;
  }
}

TEST(LoadgenOptions, HelpListsEveryFlag) {
  options o;
  CLI::App app("", "loadgen");
  options_define(app, o);
  test::expect_help_lists_every_option(app);
  auto help = parse({"--help"});
  ASSERT_FALSE(help);
  EXPECT_EQ(help.error().status, 0);
  EXPECT_NE(help.error().text.find("--soak-minutes"), std::string::npos);
}

TEST(LoadgenSse, EventsSurviveAnySplit) {
  const std::string stream =
      ": ping\n\ndata: {\"a\":1}\r\n\r\ndata: {\"b\":2}\n\nevent: x\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n";
  for (std::size_t piece = 1; piece <= stream.size(); ++piece) {
    sse_parser p;
    std::vector<std::string> events;
    for (std::size_t i = 0; i < stream.size(); i += piece)
      p.feed(std::string_view(stream).substr(i, piece), [&](std::string_view d) { events.emplace_back(d); });
    p.finish([&](std::string_view d) { events.emplace_back(d); });
    ASSERT_EQ(events, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "line1\nline2", "[DONE]"})) << piece;
  }
  sse_parser p;
  std::vector<std::string> events;
  p.feed("data: unterminated", [&](std::string_view d) { events.emplace_back(d); });
  p.finish([&](std::string_view d) { events.emplace_back(d); });
  EXPECT_EQ(events, std::vector<std::string>{"unterminated"});
}

TEST(LoadgenMetrics, PercentilesInterpolateLikeNumpy) {
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile(v, 99), 3.97);
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile({7}, 90), 7);
  const auto s = latency_stats_of({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_NEAR(s.std, 1.118033988, 1e-6);
}

TEST(LoadgenMetrics, LevelSummaryFollowsVllmDefinitions) {
  using namespace std::chrono;
  level_result level;
  level.concurrency = 2;
  const auto t0 = clock_type::now();
  level.start = t0;
  request_record ok;
  ok.outcome = request_outcome::completed;
  ok.sent = t0;
  ok.content_chunk(t0 + 100ms);  // TTFT 100
  ok.content_chunk(t0 + 150ms);
  ok.content_chunk(t0 + 300ms);  // E2EL 300
  ok.ended = t0 + 301ms;
  ok.output_tokens = 5;  // one chunk carried three tokens: TPOT = (300 - 100) / 4
  ok.prompt_tokens = 10;
  request_record bad;
  bad.outcome = request_outcome::failed;
  bad.error_kind = "server_error:queue_full";
  bad.sent = t0;
  bad.ended = t0 + 1ms;
  level.records = {ok, bad};
  level.duration_s = 0.5;
  slo_spec slo;
  slo.ttft_ms = 150;
  const auto s = level_summarize(level, slo);
  EXPECT_EQ(s.completed, 1);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.errors.at("server_error:queue_full"), 1);
  EXPECT_EQ(s.total_output_tokens, 5);
  EXPECT_EQ(s.total_input_tokens, 10);
  EXPECT_DOUBLE_EQ(s.output_throughput, 10);
  EXPECT_DOUBLE_EQ(s.request_throughput, 2);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 30);
  EXPECT_NEAR(s.ttft.mean, 100, 0.01);
  EXPECT_NEAR(s.e2el.mean, 300, 0.01);
  EXPECT_NEAR(s.tpot.mean, 50, 0.01);
  EXPECT_EQ(s.itl.n, 2u);  // chunk gaps, not token gaps
  EXPECT_NEAR(s.itl.p99, 149, 0.1);  // gaps 50 and 150
  EXPECT_EQ(s.good_completed, 1);
  EXPECT_EQ(s.max_concurrency_seen, 2);
}

TEST(LoadgenMetrics, IntervalsCountEachRequestWhereItEnded) {
  using namespace std::chrono;
  level_result level;
  const auto t0 = clock_type::now();
  level.start = t0;
  auto completed = [&](milliseconds sent, milliseconds e2el) {
    request_record r;
    r.outcome = request_outcome::completed;
    r.sent = t0 + sent;
    r.content_chunk(r.sent + e2el / 2);
    r.content_chunk(r.sent + e2el);
    r.ended = r.sent + e2el;
    r.output_tokens = 2;
    return r;
  };
  // Interval [0, 1 s): two fast requests; [1 s, 2 s): one slow one and an error; [2 s, 2.5 s): one
  // request that never ended, counted in the last interval.
  level.records = {completed(0ms, 100ms), completed(100ms, 300ms), completed(200ms, 1000ms)};
  request_record error;
  error.outcome = request_outcome::failed;
  error.error_kind = "timeout";
  error.sent = t0 + 1100ms;
  error.ended = t0 + 1500ms;
  request_record pending;
  pending.sent = t0 + 2000ms;
  level.records.push_back(error);
  level.records.push_back(pending);
  level.end = t0 + 2500ms;
  const auto parts = level_intervals(level, seconds(1), slo_spec{});
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_DOUBLE_EQ(parts[0].start_s, 0);
  EXPECT_DOUBLE_EQ(parts[1].end_s, 2);
  EXPECT_NEAR(parts[2].end_s, 2.5, 1e-9);
  EXPECT_EQ(parts[0].summary.completed, 2);
  EXPECT_NEAR(parts[0].summary.e2el.p99, 298, 0.01);  // 100 and 300 ms
  EXPECT_DOUBLE_EQ(parts[0].summary.output_throughput, 4);  // 4 tokens in 1 s
  EXPECT_EQ(parts[1].summary.completed, 1);
  EXPECT_EQ(parts[1].summary.failed, 1);
  EXPECT_EQ(parts[1].summary.errors.at("timeout"), 1);
  EXPECT_NEAR(parts[1].summary.e2el.p99, 1000, 0.01);
  EXPECT_EQ(parts[2].summary.completed, 0);
  EXPECT_EQ(parts[2].summary.failed, 1);
  EXPECT_NEAR(parts[2].summary.duration_s, 0.5, 1e-9);
  EXPECT_TRUE(level_intervals(level, seconds(0), slo_spec{}).empty());
}

TEST(LoadgenWorkload, PromptsHaveExactTokenCountsAndDiffer) {
  const std::filesystem::path tok_path = pagedserve::test::model_file("tok512.bin");
  PAGEDSERVE_REQUIRE_DATA(tok_path);
  const auto n_vocab = llama2c_tokenizer_count(tok_path.string());
  ASSERT_TRUE(n_vocab) << n_vocab.error();
  EXPECT_EQ(*n_vocab, 512);
  auto tok = llama2c_tokenizer_load(tok_path, *n_vocab);
  ASSERT_TRUE(tok) << tok.error();
  std::shared_ptr<const tokenizer> shared_tok = std::move(*tok);
  auto builder = prompt_builder::make(std::string(builtin_corpus()), shared_tok, 0);
  ASSERT_TRUE(builder) << builder.error();
  std::set<std::string> seen;
  for (int i = 0; i < 40; ++i) {
    const int n = 12 + 7 * i;
    auto spec = builder->build(i, n);
    ASSERT_TRUE(spec) << spec.error();
    EXPECT_EQ(static_cast<int>(shared_tok->encode(spec->prompt, true).size()), n) << spec->prompt;
    EXPECT_TRUE(seen.insert(spec->prompt.substr(0, 12)).second) << "prompts must differ from their first tokens";
  }
  for (const int n : {2000, 3999}) {  // long prompts (itl_long_prompt.sh sends 2000 tokens)
    auto spec = builder->build(100 + n, n);
    ASSERT_TRUE(spec) << spec.error();
    EXPECT_EQ(static_cast<int>(shared_tok->encode(spec->prompt, true).size()), n);
  }
  auto with_prefix = prompt_builder::make(std::string(builtin_corpus()), shared_tok, 48);
  ASSERT_TRUE(with_prefix) << with_prefix.error();
  const auto a = with_prefix->build(1, 100), b = with_prefix->build(2, 100);
  ASSERT_TRUE(a && b);
  const auto ta = shared_tok->encode(a->prompt, true), tb = shared_tok->encode(b->prompt, true);
  EXPECT_EQ(ta.size(), 100u);
  EXPECT_EQ(tb.size(), 100u);
  EXPECT_TRUE(std::equal(ta.begin(), ta.begin() + 48, tb.begin())) << "the shared prefix must be 48 identical tokens";
}

// A byte-fallback vocabulary (gguf_add_synthetic_vocab's: no piece matches English, every space is the
// 3 bytes of U+2581) skips two counts at each word boundary; prompts still come out exact.
TEST(LoadgenWorkload, ExactCountsFromAByteFallbackVocabulary) {
  gguf_writer w;
  gguf_add_synthetic_vocab(w, 600);
  const auto path = std::filesystem::temp_directory_path() / ("loadgen_bytes_" + std::to_string(::getpid()) + ".gguf");
  ASSERT_TRUE(w.write(path).has_value());
  auto tok = gguf_tokenizer_load(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(tok) << tok.error();
  std::shared_ptr<const tokenizer> shared_tok = std::move(*tok);
  auto builder = prompt_builder::make(std::string(builtin_corpus()), shared_tok, 0);
  ASSERT_TRUE(builder) << builder.error();
  for (int n = 16; n <= 64; ++n) {
    auto spec = builder->build(n, n);
    ASSERT_TRUE(spec) << n << ": " << spec.error();
    EXPECT_EQ(static_cast<int>(shared_tok->encode(spec->prompt, true).size()), n) << spec->prompt;
  }
}

TEST(LoadgenReport, JsonWriterOutputParses) {
  json_writer w;
  w.begin_object().field("s", "a\"b\\c\n\x01").field("n", 1.5).field("i", 3).field("nan", 0.0 / 0.0);
  w.key("arr").begin_array().value(1).value("x").begin_object().end_object().end_array().end_object();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_FALSE(parser.parse(w.str()).get(doc)) << w.str();
  std::string_view s;
  ASSERT_FALSE(doc["s"].get(s));
  EXPECT_EQ(s, "a\"b\\c\n\x01");
  EXPECT_TRUE(doc["nan"].is_null());
  EXPECT_EQ(doc["arr"].get_array().size(), 3u);
}

TEST(LoadgenPlot, ScriptHasOneDataBlockPerRun) {
  result_set a{"A", "concurrency", {{{"concurrency", 1}, {"output_throughput", 10}}, {{"concurrency", 4}, {"output_throughput", 30}}}};
  result_set b = a;
  b.label = "B's run";
  const std::string script = plot_script({a, b}, "/tmp/x.png");
  EXPECT_NE(script.find("$run0 << EOD\n1 10"), std::string::npos) << script;
  EXPECT_NE(script.find("$run1 << EOD"), std::string::npos);
  EXPECT_NE(script.find("'B''s run output tok/s'"), std::string::npos) << "labels are quoted for gnuplot";
  EXPECT_NE(script.find("set logscale x 2"), std::string::npos);
}

}  // namespace
}  // namespace pagedserve::loadgen
