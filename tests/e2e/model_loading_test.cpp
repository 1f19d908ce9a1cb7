// Start-up made visible, through the real binary: the server listens before the model loads and
// answers 503 (GET /health {"status":"loading"}, an OpenAI error on the model's routes, a refused
// WebSocket upgrade) until it is ready, then serves on the same socket; a SIGTERM during the load
// exits 0; each load phase logs a line; the weight conversion's progress line is redrawn on a
// terminal (a pseudo-terminal here) and absent from a pipe. The model is a random-weight llama2.c
// checkpoint large enough that quantizing it to int8 takes seconds on the 2-core CI machine.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <regex>

#include "e2e/e2e_check.hpp"
#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"
#include "pagedserve/model.hpp"

namespace pagedserve::e2e {
namespace {

constexpr auto load_deadline = std::chrono::seconds(120);  // the slow model, on a loaded machine
constexpr int slow_model_layers = 6;
// What int8 quantizes: the (tied) token embedding and seven matrices per layer.
const std::string slow_model_matrices = std::to_string(1 + 7 * slow_model_layers);

// A checkpoint of tok512's vocabulary, ~300 MB of fp32 weights, written once into the build tree
// beside the binary and reused by every test (and every later run). Empty on a write failure, with
// the reason added as a test failure.
std::filesystem::path slow_model() {
  model_config c;
  c.dim = 1024;
  c.hidden_dim = 2816;
  c.n_layers = slow_model_layers;
  c.n_heads = 16;
  c.n_kv_heads = 16;
  c.vocab_size = 512;
  c.seq_len = 256;
  const std::filesystem::path dir = test::server_binary().parent_path() / "test-models";
  const std::filesystem::path path = dir / "slow-load-1024x2816x6.bin";
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return path;
  std::filesystem::create_directories(dir, ec);
  // Written under a unique name and renamed: tests running in parallel never read a partial file.
  const std::filesystem::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
  if (auto r = llama2c_write_random(tmp, c, 7); !r) {
    ADD_FAILURE() << r.error();
    return {};
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    ADD_FAILURE() << "rename " << tmp << ": " << ec.message();
    return {};
  }
  return path;
}

std::vector<std::string> slow_model_args(const std::filesystem::path& model) {
  return {"--model", model.string(), "--tokenizer", tokenizer_path().string(), "--quantize", "int8"};
}

// The string field `key` of a JSON object's member `object` ("" for the top level).
std::string json_field(const std::string& body, const std::string& object, const std::string& key) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(body).get(doc)) return "<not JSON: " + body + ">";
  simdjson::dom::element at = doc;
  if (!object.empty() && doc[object].get(at)) return "<no " + object + ">";
  std::string_view value;
  if (at[key].get(value)) return "<no string " + key + ">";
  return std::string(value);
}

// A WebSocket handshake on a fresh connection: the server's answer to it.
std::expected<raw_response, std::string> websocket_upgrade(unsigned short port) {
  return http_exchange(port, http_get_bytes("/v1/ws", {"Upgrade: websocket", "Connection: Upgrade",
                                                       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                                                       "Sec-WebSocket-Version: 13"}));
}

// Polls /health until it answers 200 or the deadline passes; the last answer.
std::expected<http_response, std::string> wait_until_ready(unsigned short port) {
  const auto deadline = steady::now() + test::scaled(load_deadline);
  std::expected<http_response, std::string> last = std::unexpected("no answer");
  while (steady::now() < deadline) {
    last = http_get(port, "/health");
    if (last && last->status == 200) break;
    std::this_thread::sleep_for(20ms);
  }
  return last;
}

// Every phase of loading a llama2.c checkpoint logged its line, with a duration.
void expect_phase_lines(const std::string& log) {
  for (const std::string& line : {std::string(R"(selected the \w+ kernels \(.*\) in [0-9.]+ m?s)"),
                           std::string(R"(mapped llama2\.c checkpoint slow-load-1024x2816x6\.bin, [0-9.]+ MiB \(dim 1024, 6 layers, vocab 512\), in [0-9.]+ m?s)"),
                           "quantized " + slow_model_matrices + R"( matrices to int8 \([0-9.]+ MiB -> [0-9.]+ MiB\) in [0-9.]+ m?s)",
                           std::string(R"(read tokenizer tok512\.bin \(512 tokens\) in [0-9.]+ m?s)")})
    EXPECT_TRUE(std::regex_search(log, std::regex(line))) << "no line matching " << line << " in:\n" << log;
}

TEST(model_loading, listens_at_once_answers_503_while_loading_then_serves_on_the_same_socket) {
  E2E_REQUIRE_MODEL();
  const std::filesystem::path model = slow_model();
  ASSERT_FALSE(model.empty());
  server_process server(slow_model_args(model), load_deadline, server_wait::listening);
  ASSERT_NE(server.port(), 0) << server.error();
  const unsigned short port = server.port();

  // A keep-alive connection opened while loading, used again once the model is ready.
  http_conn kept;
  ASSERT_TRUE(kept.connect(port));
  ASSERT_TRUE(kept.send(http_get_bytes("/health")));
  auto health = kept.read_response(10s);
  ASSERT_TRUE(health) << health.error();
  EXPECT_EQ(health->status, 503) << health->body;
  EXPECT_EQ(json_field(health->body, "", "status"), "loading") << health->body;
  EXPECT_EQ(health->header("retry-after"), "1");

  // Every route that needs the model says it is loading, in OpenAI's error shape.
  for (const std::string& request :
       {http_get_bytes("/v1/models"), http_get_bytes("/metrics"),
        http_post_bytes("/v1/completions", R"({"prompt":"Once","max_tokens":4})"),
        http_post_bytes("/v1/chat/completions", R"({"messages":[{"role":"user","content":"Hi"}]})"),
        http_post_bytes("/tokenize", R"({"prompt":"Once"})")}) {
    SCOPED_TRACE(request.substr(0, request.find('\r')));
    auto r = http_exchange(port, request);
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->status, 503) << r->body;
    EXPECT_EQ(json_field(r->body, "error", "code"), "model_loading") << r->body;
    EXPECT_EQ(json_field(r->body, "error", "type"), "unavailable_error") << r->body;
  }
  auto upgrade = websocket_upgrade(port);
  ASSERT_TRUE(upgrade) << upgrade.error();
  EXPECT_EQ(upgrade->status, 503) << upgrade->body;
  EXPECT_EQ(json_field(upgrade->body, "error", "code"), "model_loading") << upgrade->body;
  auto version = http_get(port, "/version");  // needs no model
  ASSERT_TRUE(version) << version.error();
  EXPECT_EQ(version->status, 200);
  // All of the above happened while loading: the server still says so, and has not logged ready.
  auto still = http_get(port, "/health");
  ASSERT_TRUE(still) << still.error();
  EXPECT_EQ(still->status, 503) << "the model loaded before the checks ended; make slow_model() larger";
  EXPECT_EQ(server.log().find("serving '"), std::string::npos);

  auto ready = wait_until_ready(port);
  ASSERT_TRUE(ready) << ready.error() << "\n" << server.log();
  ASSERT_EQ(ready->status, 200) << ready->body << "\n" << server.log();
  auto parsed = parse_health(ready->body);  // the ready body, unchanged
  ASSERT_TRUE(parsed) << parsed.error() << ": " << ready->body;
  EXPECT_EQ(parsed->status, "ok");
  EXPECT_EQ(parsed->model, "slow-load-1024x2816x6");
  EXPECT_GT(parsed->kv_blocks_total, 0);

  // The connection opened while loading is served like any other.
  ASSERT_TRUE(kept.send(http_get_bytes("/health")));
  auto again = kept.read_response(10s);
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(again->status, 200) << again->body;
  EXPECT_EQ(json_field(again->body, "", "status"), "ok");

  auto completion = http_exchange(
      port, http_post_bytes("/v1/completions", R"({"prompt":"Once upon a time","max_tokens":4,"temperature":0})"));
  ASSERT_TRUE(completion) << completion.error();
  EXPECT_EQ(completion->status, 200) << completion->body;
  EXPECT_EQ(json_field(completion->body, "", "object"), "text_completion") << completion->body;
  auto models = http_get(port, "/v1/models");
  ASSERT_TRUE(models) << models.error();
  EXPECT_EQ(models->status, 200) << models->body;

  const process_result stopped = server.stop(10s);
  EXPECT_TRUE(stopped.exited && stopped.exit_code == 0) << stopped.err;
  const std::string& log = stopped.err;
  expect_phase_lines(log);
  EXPECT_TRUE(std::regex_search(log, std::regex(R"(allocated the KV pool \(1024 blocks of 16 tokens, f32, [0-9.]+ MiB\) and started the engine in )")))
      << log;
  EXPECT_TRUE(std::regex_search(log, std::regex(R"(loaded 'slow-load-1024x2816x6' and ready to serve in [0-9.]+ m?s)"))) << log;
  // Listening came first, the conversion next, serving last.
  const std::size_t listening = log.find("listening on 127.0.0.1:" + std::to_string(port));
  const std::size_t quantized = log.find("quantized " + slow_model_matrices + " matrices");
  const std::size_t serving = log.find("serving 'slow-load-1024x2816x6'");
  ASSERT_NE(listening, std::string::npos) << log;
  ASSERT_NE(quantized, std::string::npos) << log;
  ASSERT_NE(serving, std::string::npos) << log;
  EXPECT_LT(listening, quantized);
  EXPECT_LT(quantized, serving);
  // stderr is a pipe here: no progress line redrawn in place.
  EXPECT_EQ(log.find('\r'), std::string::npos) << log;
  EXPECT_EQ(log.find("\033[K"), std::string::npos) << log;
}

TEST(model_loading, sigterm_while_loading_abandons_the_load_and_exits_0) {
  E2E_REQUIRE_MODEL();
  const std::filesystem::path model = slow_model();
  ASSERT_FALSE(model.empty());
  server_process server(slow_model_args(model), load_deadline, server_wait::listening);
  ASSERT_NE(server.port(), 0) << server.error();
  auto health = http_get(server.port(), "/health");
  ASSERT_TRUE(health) << health.error();
  ASSERT_EQ(health->status, 503) << health->body;
  const process_result r = server.stop(20s);
  EXPECT_FALSE(r.timed_out) << r.err;
  EXPECT_TRUE(r.exited && r.exit_code == 0) << "exit " << r.exit_code << ", signal " << r.term_signal << "\n" << r.err;
  EXPECT_NE(r.err.find("while the model loads: abandoning the load"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("model load abandoned"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("serving '"), std::string::npos) << r.err;
}

std::vector<std::string> generate_args(const std::filesystem::path& model) {
  std::vector<std::string> argv = {test::server_binary().string(), "generate"};
  for (auto& a : slow_model_args(model)) argv.push_back(std::move(a));
  for (const char* a : {"--prompt", "Once", "--max-tokens", "2", "--temperature", "0"}) argv.emplace_back(a);
  return argv;
}

TEST(model_loading, progress_is_redrawn_in_place_on_a_terminal_only) {
  E2E_REQUIRE_MODEL();
  const std::filesystem::path model = slow_model();
  ASSERT_FALSE(model.empty());

  const process_result tty = run_on_terminal(generate_args(model), load_deadline);
  ASSERT_TRUE(tty.exited && tty.exit_code == 0) << "exit " << tty.exit_code << ", timed out " << tty.timed_out << "\n"
                                                << tty.out;
  // Drawn over itself with \r (matrices, bytes, percent, elapsed), then cleared for the phase's line.
  const std::regex progress(R"(\rquantizing weights to int8: \d+/)" + slow_model_matrices +
                            R"( matrices, [0-9.]+ (B|KiB|MiB) / [0-9.]+ MiB \(\d+%\), [0-9.]+ m?s\x1b\[K)");
  const auto draws = std::distance(std::sregex_iterator(tty.out.begin(), tty.out.end(), progress), std::sregex_iterator());
  EXPECT_GE(draws, 1) << tty.out;
  const std::size_t cleared = tty.out.rfind("\r\033[K");
  const std::size_t phase = tty.out.find("quantized " + slow_model_matrices + " matrices to int8");
  ASSERT_NE(cleared, std::string::npos) << tty.out;
  ASSERT_NE(phase, std::string::npos) << tty.out;
  EXPECT_LT(cleared, phase) << "the progress line is cleared before the phase's line";
  EXPECT_EQ(tty.out.find("quantizing weights to int8: ", phase), std::string::npos) << "drawn after the step ended";

  const process_result piped = run_process(generate_args(model), load_deadline);
  ASSERT_TRUE(piped.exited && piped.exit_code == 0) << piped.err;
  expect_phase_lines(piped.err);
  EXPECT_EQ(piped.err.find('\r'), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find("\033[K"), std::string::npos) << piped.err;
  EXPECT_FALSE(piped.out.empty());
}

}  // namespace
}  // namespace pagedserve::e2e
