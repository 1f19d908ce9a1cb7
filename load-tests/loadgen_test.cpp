// loadgen against real sockets: the real pagedserve (stories260K, ephemeral port) over WebSocket,
// a fake OpenAI SSE server over HTTP, and a short soak. Checks counts and shapes, never timings.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <memory>

#include "fake_sse_server.hpp"
#include "support/server_process.hpp"

namespace pagedserve::loadgen::test {
namespace {

namespace fs = std::filesystem;

fs::path scratch_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(LOADGEN_TEST_TMP) / (std::string(info->test_suite_name()) + "." + info->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string completions_url(unsigned short port) {
  return "http://127.0.0.1:" + std::to_string(port) + "/v1/completions";
}

std::string describe(const e2e::process_result& r) {
  const std::string end = r.exited      ? "exit " + std::to_string(r.exit_code)
                          : r.timed_out ? std::string("killed at its deadline")
                                        : "killed by signal " + std::to_string(r.term_signal);
  return end + "\n--- stdout ---\n" + r.out + "\n--- stderr ---\n" + r.err;
}

// The invariants every sweep result must hold: per level, sent == completed + failed, and for each
// request TTFT <= E2EL. Returns the parsed levels.
std::vector<simdjson::dom::object> check_results(simdjson::dom::parser& parser, const fs::path& json,
                                                 int n_levels) {
  simdjson::dom::element doc;
  const auto error = parser.load(json.string()).get(doc);
  EXPECT_FALSE(error) << "results JSON does not parse: " << simdjson::error_message(error);
  std::vector<simdjson::dom::object> out;
  if (error) return out;
  simdjson::dom::array levels;
  EXPECT_FALSE(doc["levels"].get(levels));
  for (simdjson::dom::object level : levels) {
    std::int64_t sent = -1, completed = -1, failed = -1;
    EXPECT_FALSE(level["num_requests"].get(sent));
    EXPECT_FALSE(level["completed"].get(completed));
    EXPECT_FALSE(level["failed"].get(failed));
    EXPECT_EQ(completed + failed, sent);
    for (const char* name : {"request_throughput", "output_throughput", "total_token_throughput", "mean_ttft_ms",
                             "median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "p99_itl_ms", "p90_e2el_ms", "duration_s"}) {
      double v = -1;
      EXPECT_FALSE(level[name].get(v)) << "missing " << name;
      EXPECT_GE(v, 0) << name;
    }
    simdjson::dom::array requests;
    EXPECT_FALSE(level["requests"].get(requests));
    EXPECT_EQ(static_cast<std::int64_t>(requests.size()), sent);
    for (simdjson::dom::object rec : requests) {
      double ttft = -1, e2el = -1;
      std::string_view outcome;
      EXPECT_FALSE(rec["outcome"].get(outcome));
      if (outcome != "completed") continue;
      EXPECT_FALSE(rec["ttft_ms"].get(ttft));
      EXPECT_FALSE(rec["e2el_ms"].get(e2el));
      EXPECT_LE(ttft, e2el);
      EXPECT_GE(ttft, 0);
    }
    out.push_back(level);
  }
  EXPECT_EQ(static_cast<int>(out.size()), n_levels);
  return out;
}

std::int64_t get_int(simdjson::dom::object o, const char* key) {
  std::int64_t v = -1;
  EXPECT_FALSE(o[key].get(v)) << "missing " << key;
  return v;
}

// pagedserve serving stories260K on an ephemeral port, for loadgen to drive over WebSocket.
class LoadgenRealServer : public ::testing::Test {
 protected:
  void SetUp() override {
    PAGEDSERVE_REQUIRE_DATA(e2e::model_path());
    PAGEDSERVE_REQUIRE_DATA(tok_);
    server_ = std::make_unique<e2e::server_process>(std::vector<std::string>{}, std::chrono::seconds(20));
    ASSERT_TRUE(server_->ready()) << server_->error();
  }
  std::string ws_target() const { return "ws://127.0.0.1:" + std::to_string(server_->port()) + "/v1/ws"; }

  const fs::path tok_ = e2e::tokenizer_path();
  std::unique_ptr<e2e::server_process> server_;
};

TEST_F(LoadgenRealServer, WebSocketSweepCountsAddUp) {
  const fs::path dir = scratch_dir();
  const fs::path json = dir / "results.json";
  const auto r = e2e::run_process({LOADGEN_BINARY, "--target", ws_target(), "--concurrency", "1,4", "--num-requests",
                                   "8", "--max-tokens", "16", "--ignore-eos", "--prompt-tokens", "20", "--tokenizer",
                                   tok_.string(), "--out", json.string(), "--label", "ctest"},
                                  std::chrono::seconds(120));
  ASSERT_EQ(r.exit_code, 0) << describe(r) << server_->error();
  simdjson::dom::parser parser;
  for (simdjson::dom::object level : check_results(parser, json, 2)) {
    EXPECT_EQ(get_int(level, "num_requests"), 8);
    EXPECT_EQ(get_int(level, "failed"), 0);
    const std::int64_t completed = get_int(level, "completed");
    EXPECT_EQ(get_int(level, "total_output_tokens"), completed * 16);
    EXPECT_EQ(get_int(level, "total_input_tokens"), completed * 20);  // exact prompts, as the server counted them
    simdjson::dom::array requests;
    ASSERT_FALSE(level["requests"].get(requests));
    for (simdjson::dom::object rec : requests) {
      EXPECT_EQ(get_int(rec, "output_tokens"), 16);
      EXPECT_EQ(get_int(rec, "prompt_tokens"), 20);
      EXPECT_EQ(get_int(rec, "n_chunks") > 0, true);
    }
  }
  EXPECT_NE(r.out.find("out tok/s"), std::string::npos) << "no table on stdout:\n" << r.out;
}

TEST_F(LoadgenRealServer, ShortSoakEndsAtRest) {
  const fs::path dir = scratch_dir();
  const fs::path json = dir / "soak.json";
  // 3 s of load at 8 in flight: a third cancelled or dropped at random moments.
  const auto r = e2e::run_process(
      {LOADGEN_BINARY, "--target", ws_target(), "--soak-minutes", "0.05", "--concurrency", "8", "--max-tokens",
       "uniform:8:96", "--ignore-eos", "--prompt-tokens", "uniform:4:120", "--tokenizer", tok_.string(),
       "--cancel-fraction", "0.2", "--disconnect-fraction", "0.15", "--seed", "3", "--soak-interval-s", "1", "--out",
       json.string()},
      std::chrono::seconds(120));
  ASSERT_EQ(r.exit_code, 0) << describe(r) << server_->error();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_FALSE(parser.load(json.string()).get(doc));
  bool passed = false;
  ASSERT_FALSE(doc["passed"].get(passed));
  EXPECT_TRUE(passed);
  simdjson::dom::array checks;
  ASSERT_FALSE(doc["checks"].get(checks));
  EXPECT_GE(checks.size(), 4u) << "every check (answers, idle, KV blocks, RSS) must have run";
  // The report over time: 1 s intervals whose counts add up to the whole run's, each with /health.
  simdjson::dom::array intervals, levels;
  ASSERT_FALSE(doc["intervals"].get(intervals));
  ASSERT_FALSE(doc["levels"].get(levels));
  EXPECT_GE(intervals.size(), 3u);
  auto count = [](simdjson::dom::object o, const char* key) {  // cancelled, disconnected: absent when 0
    std::int64_t v = 0;
    return o[key].get(v) ? 0 : v;
  };
  std::int64_t ended = 0;
  for (simdjson::dom::object in : intervals) {
    ended += count(in, "completed") + count(in, "failed") + count(in, "cancelled") + count(in, "disconnected");
    double rss = 0;
    EXPECT_FALSE(in["health"]["rss_bytes"].get(rss)) << "no /health sample in an interval";
  }
  simdjson::dom::object whole;
  ASSERT_FALSE(levels.at(0).get(whole));
  EXPECT_EQ(ended, get_int(whole, "num_requests"));
  EXPECT_NE(r.out.find("p99 E2EL ms"), std::string::npos) << "no report over time on stdout:\n" << r.out;
}

TEST(LoadgenFakeSse, OpenAiStreamCountsAddUp) {
  const fs::path dir = scratch_dir();
  fake_sse_server fake;
  const fs::path json = dir / "results.json";
  const auto r = e2e::run_process(
      {LOADGEN_BINARY, "--target", completions_url(fake.port()), "--concurrency", "1,4", "--num-requests", "8",
       "--max-tokens", "5", "--ignore-eos", "--prompt-tokens", "12", "--model", "fake", "--extra-body",
       R"({"cache_prompt":false})", "--out", json.string()},
      std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(fake.requests(), 16);
  simdjson::dom::parser parser;
  for (simdjson::dom::object level : check_results(parser, json, 2)) {
    EXPECT_EQ(get_int(level, "failed"), 0);
    EXPECT_EQ(get_int(level, "total_output_tokens"), get_int(level, "completed") * 5);
    EXPECT_EQ(get_int(level, "total_input_tokens"), get_int(level, "completed") * 12);  // 12 words, as the fake counts
    simdjson::dom::array requests;
    ASSERT_FALSE(level["requests"].get(requests));
    for (simdjson::dom::object rec : requests) {
      EXPECT_EQ(get_int(rec, "n_chunks"), 5);  // the usage chunk has no choices: not content
      bool usage = false;
      EXPECT_FALSE(rec["usage_reported"].get(usage));
      EXPECT_TRUE(usage);
    }
  }
  // The request bodies carry what llama-server and vLLM need for a fair comparison.
  simdjson::dom::parser body_parser;
  for (const auto& body : fake.bodies()) {
    simdjson::dom::element b;
    ASSERT_FALSE(body_parser.parse(body).get(b)) << body;
    bool stream = false, ignore_eos = false, include_usage = false, cache_prompt = true;
    EXPECT_FALSE(b["stream"].get(stream));
    EXPECT_FALSE(b["ignore_eos"].get(ignore_eos));
    EXPECT_FALSE(b["stream_options"]["include_usage"].get(include_usage));
    EXPECT_FALSE(b["cache_prompt"].get(cache_prompt));
    EXPECT_TRUE(stream && ignore_eos && include_usage && !cache_prompt) << body;
  }
}

TEST(LoadgenFakeSse, HttpErrorsAreCountedByKind) {
  const fs::path dir = scratch_dir();
  fake_sse_server fake;
  const fs::path json = dir / "results.json";
  const auto r =
      e2e::run_process({LOADGEN_BINARY, "--target", completions_url(fake.port()), "--concurrency", "2",
                        "--num-requests", "4", "--max-tokens", "5", "--model", "fail503", "--out", json.string()},
                       std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 3) << "failed requests must give exit status 3\n" << describe(r);
  simdjson::dom::parser parser;
  for (simdjson::dom::object level : check_results(parser, json, 1)) {
    EXPECT_EQ(get_int(level, "completed"), 0);
    EXPECT_EQ(get_int(level, "failed"), 4);
    EXPECT_EQ(get_int(level["errors"].get_object().value(), "http_503"), 4);
  }
}

TEST(LoadgenCli, RefusesNonLoopbackTargetsAndBadFlags) {
  auto r = e2e::run_process({LOADGEN_BINARY, "--target", "ws://10.1.2.3:8080/v1/ws"}, std::chrono::seconds(10));
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_NE(r.err.find("loopback"), std::string::npos) << r.err;
  r = e2e::run_process({LOADGEN_BINARY, "--target", "ws://127.0.0.1:1/v1/ws", "--concurrency", "0"},
                       std::chrono::seconds(10));
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  r = e2e::run_process({LOADGEN_BINARY, "--help"}, std::chrono::seconds(10));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--compare"), std::string::npos);
}

TEST(LoadgenCli, ConnectionRefusedIsAnErrorNotAHang) {
  const fs::path dir = scratch_dir();
  // A port nobody listens on: bind one, note it, close it.
  unsigned short port = 0;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }
  const auto r = e2e::run_process({LOADGEN_BINARY, "--target", completions_url(port), "--num-requests", "2",
                                   "--max-tokens", "4", "--out", (dir / "r.json").string()},
                                  std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 3) << describe(r);
  simdjson::dom::parser parser;
  for (simdjson::dom::object level : check_results(parser, dir / "r.json", 1))
    EXPECT_EQ(get_int(level["errors"].get_object().value(), "connect"), 2);
}

}  // namespace
}  // namespace pagedserve::loadgen::test
