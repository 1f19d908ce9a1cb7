// End-to-end tests of /v1/ws against the real binary over real sockets: streams match the CLI,
// cancel and disconnect free the engine, and bad input gets a typed error on a socket that
// keeps working. Every wait is bounded, so a broken server fails a test rather than hanging it.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <sstream>

#include "e2e/e2e_check.hpp"
#include "support/server_process.hpp"
#include "e2e/stream_collector.hpp"

namespace pagedserve::e2e {
namespace {

constexpr auto stream_timeout = std::chrono::seconds(30);      // generous: the model needs milliseconds
constexpr auto quiet_period = std::chrono::milliseconds(300);  // "nothing more arrives" is checked this long

// The CLI's greedy completion, failing the test when the CLI itself fails.
std::string expected_completion(const std::string& prompt, int max_tokens) {
  const process_result r = cli_generate(prompt, max_tokens);
  EXPECT_TRUE(r.exited && r.exit_code == 0 && !r.timed_out)
      << "generate failed (exit " << r.exit_code << ", signal " << r.term_signal << "): " << r.err;
  return r.out;
}

// Checks a request that ran to its end: its text, exactly one done, nothing after it.
void expect_completed(const stream_collector& frames, const std::string& id, const std::string& expected_text,
                      const std::string& finish_reason, std::int64_t completion_tokens) {
  SCOPED_TRACE("request '" + id + "'");
  const request_log& log = frames[id];
  EXPECT_EQ(log.text, expected_text);
  ASSERT_EQ(log.dones.size(), 1u) << "expected exactly one done frame";
  EXPECT_TRUE(log.errors.empty()) << log.errors.front().raw;
  EXPECT_TRUE(log.after_done.empty()) << "frame after done: " << log.after_done.front();
  const server_frame& done = log.dones.front();
  EXPECT_EQ(done.finish_reason, finish_reason) << done.raw;
  EXPECT_EQ(done.completion_tokens, completion_tokens) << done.raw;
  EXPECT_GT(done.prompt_tokens, 0) << done.raw;
  EXPECT_TRUE(done.has_timings) << done.raw;
}

// Reads for quiet_period and fails on any frame for id (or any frame at all when id is empty).
void expect_quiet(ws_client& client, stream_collector& frames, const std::string& id) {
  const int before = frames.n_frames;
  const std::size_t after_before = frames[id].after_done.size();
  read_until(
      client, frames, [] { return false; }, quiet_period);
  if (id.empty())
    EXPECT_EQ(frames.n_frames, before) << "unexpected frames";
  else
    EXPECT_EQ(frames[id].after_done.size(), after_before) << "frames for '" << id << "' after its done";
}

// a. Greedy streams over two sockets, requests interleaved, equal the CLI's output byte for byte.
TEST(websocket, streams_equal_cli_across_two_sockets) {
  E2E_REQUIRE_MODEL();
  const std::vector<std::string> prompts = {"Once upon a time", "One day, Lily", "Tim saw a café and a 🐶"};
  std::vector<std::string> expected;
  for (const auto& p : prompts) expected.push_back(expected_completion(p, 40));

  server_process server;
  ASSERT_TRUE(server.ready()) << server.error();
  ws_client first, second;
  E2E_ASSERT_OK(first.connect(server.port()));
  E2E_ASSERT_OK(second.connect(server.port()));
  // Two requests on one socket, one on the other, all sent before anything is read.
  E2E_ASSERT_OK(first.send_text(generate_frame("p0", prompts[0], 40)));
  E2E_ASSERT_OK(second.send_text(generate_frame("p1", prompts[1], 40)));
  E2E_ASSERT_OK(first.send_text(generate_frame("p2", prompts[2], 40)));

  stream_collector frames1, frames2;
  const bool finished = read_until(
      {{&first, &frames1}, {&second, &frames2}},
      [&] { return frames1.done("p0") && frames1.done("p2") && frames2.done("p1"); }, stream_timeout);
  read_until(
      {{&first, &frames1}, {&second, &frames2}}, [] { return false; }, quiet_period);
  ASSERT_TRUE(finished) << "not every request finished in time";
  expect_completed(frames1, "p0", expected[0], "length", 40);
  expect_completed(frames2, "p1", expected[1], "length", 40);
  expect_completed(frames1, "p2", expected[2], "length", 40);
  EXPECT_EQ(frames1.by_id.size(), 2u) << "frames for another socket's request";
  EXPECT_EQ(frames2.by_id.size(), 1u) << "frames for another socket's request";
  EXPECT_TRUE(frames1.problems.empty() && frames2.problems.empty());
  first.close();
  second.close();
}

// b. A cancel mid-stream ends the request with done/cancelled and frees everything it held.
TEST(websocket, cancel_mid_stream_frees_the_engine) {
  E2E_REQUIRE_MODEL();
  server_process server;
  ASSERT_TRUE(server.ready()) << server.error();
  ws_client client;
  E2E_ASSERT_OK(client.connect(server.port()));
  // Ballast shares every engine step with the request, so it streams for about a second rather
  // than ~60 ms, and the cancel lands mid-stream however fast this machine runs the tiny model.
  constexpr int n_ballast = 16;
  for (int i = 0; i < n_ballast; ++i)
    E2E_ASSERT_OK(
        client.send_text(generate_frame("ballast" + std::to_string(i), "One day, Lily", 480, R"(,"ignore_eos":true)")));
  E2E_ASSERT_OK(client.send_text(generate_frame("long", "Once upon a time", 400, R"(,"ignore_eos":true)")));
  stream_collector frames;
  ASSERT_TRUE(read_until(
      client, frames, [&] { return frames["long"].n_token_frames >= 3 || frames.done("long"); }, stream_timeout));
  ASSERT_FALSE(frames.done("long")) << "the request ended before it could be cancelled: "
                                    << frames["long"].dones[0].raw;
  E2E_ASSERT_OK(client.send_text(cancel_frame("long")));
  ASSERT_TRUE(read_until(
      client, frames, [&] { return frames.done("long") || !frames["long"].errors.empty(); }, stream_timeout));
  expect_quiet(client, frames, "long");
  const request_log& log = frames["long"];
  ASSERT_EQ(log.dones.size(), 1u) << (log.errors.empty() ? "" : log.errors.front().raw);
  EXPECT_EQ(log.dones[0].finish_reason, "cancelled") << log.dones[0].raw;
  EXPECT_LT(log.dones[0].completion_tokens, 400) << log.dones[0].raw;
  EXPECT_EQ(log.dones[0].completion_tokens, log.n_token_ids) << "usage disagrees with the token ids streamed";
  EXPECT_TRUE(log.errors.empty());

  // Cancel the ballast too; then nothing may be left in the engine.
  for (int i = 0; i < n_ballast; ++i) E2E_ASSERT_OK(client.send_text(cancel_frame("ballast" + std::to_string(i))));
  auto ballast_done = [&] {
    for (int i = 0; i < n_ballast; ++i)
      if (!frames.done("ballast" + std::to_string(i))) return false;
    return true;
  };
  ASSERT_TRUE(read_until(client, frames, ballast_done, stream_timeout));
  for (int i = 0; i < n_ballast; ++i) {
    const request_log& b = frames["ballast" + std::to_string(i)];
    EXPECT_EQ(b.dones.size(), 1u);
    EXPECT_TRUE(b.errors.empty()) << "ballast" << i << ": " << b.errors.front().raw;  // cancelled while in flight
  }
  auto health = wait_for_idle(server.port(), std::chrono::seconds(2));
  ASSERT_TRUE(health) << health.error();
  EXPECT_TRUE(health->idle()) << "running " << health->running << ", waiting " << health->waiting << ", kv free "
                              << health->kv_blocks_free << " of " << health->kv_blocks_total;
  client.close();
}

// Token frames must leave the server as they are made. Without TCP_NODELAY on the server's
// sockets, Nagle's algorithm holds each frame after the first until the client's delayed ACK
// (40 ms on Linux): streams stutter and a client's cancel lands hundreds of tokens late. The
// bound is relative to the server's own generation rate, with generous slack.
TEST(websocket, disconnect_cancels_its_requests) {
  E2E_REQUIRE_MODEL();
  const std::string expected = expected_completion("Once upon a time", 40);
  server_process server;
  ASSERT_TRUE(server.ready()) << server.error();
  {
    ws_client client;
    E2E_ASSERT_OK(client.connect(server.port()));
    for (int i = 0; i < 4; ++i)
      E2E_ASSERT_OK(
          client.send_text(generate_frame("d" + std::to_string(i), "Once upon a time", 400, R"(,"ignore_eos":true)")));
    E2E_ASSERT_OK(client.read(std::chrono::seconds(10)));
    client.abort();
  }
  auto health = wait_for_idle(server.port(), std::chrono::seconds(5));
  ASSERT_TRUE(health) << health.error();
  EXPECT_TRUE(health->idle()) << "running " << health->running << ", waiting " << health->waiting << ", kv free "
                              << health->kv_blocks_free << " of " << health->kv_blocks_total;

  ws_client next;
  E2E_ASSERT_OK(next.connect(server.port()));
  E2E_ASSERT_OK(next.send_text(generate_frame("again", "Once upon a time", 40)));
  stream_collector frames;
  ASSERT_TRUE(read_until(
      next, frames, [&] { return frames.done("again"); }, stream_timeout))
      << server.log();
  expect_completed(frames, "again", expected, "length", 40);
  next.close();
}

// Writes text to a fresh file under the temp directory; removes it when done with.
class temp_file {
 public:
  temp_file(const std::string& stem, std::string_view contents) {
    path_ = std::filesystem::temp_directory_path() /
            (stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::ofstream(path_, std::ios::binary).write(contents.data(), static_cast<std::streamsize>(contents.size()));
  }
  ~temp_file() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

// One bad frame and the error it must earn; id nullopt means the error's id is JSON null.
struct bad_input {
  std::string what, frame;
  std::optional<std::string> id;
  std::string code;
  bool binary = false;
};

std::vector<bad_input> bad_inputs() {
  std::string long_prompt;
  for (int i = 0; i < 3000; ++i) long_prompt += "the ";  // ~3000 tokens against a 512-token context
  return {
      {"malformed JSON", R"({"type":"generate","id":"e1","prompt":)", std::nullopt, "invalid_json"},
      {"missing prompt", R"({"type":"generate","id":"e2","params":{"max_tokens":5}})", "e2", "invalid_request"},
      {"string max_tokens", R"({"type":"generate","id":"e3","prompt":"hi","params":{"max_tokens":"ten"}})", "e3",
       "invalid_request"},
      {"string temperature", R"({"type":"generate","id":"e4","prompt":"hi","params":{"temperature":"hot"}})", "e4",
       "invalid_request"},
      {"unknown type", R"({"type":"launch","id":"e5","prompt":"hi"})", "e5", "unknown_type"},
      {"unknown message field", R"({"type":"generate","id":"e6","messages":[{"role":"user","colour":"red"}]})", "e6",
       "unknown_field"},
      {"binary frame", generate_frame("e7", "hi", 5), std::nullopt, "binary_frame", true},
      {"duplicate id", generate_frame("dup", "Once upon a time", 5), "dup", "duplicate_id"},
      {"max_tokens 0", generate_frame("e8", "hi", 0), "e8", "invalid_max_tokens"},
      {"max_tokens -3", generate_frame("e9", "hi", -3), "e9", "invalid_max_tokens"},
      {"max_tokens beyond the context", generate_frame("e10", "hi", 100000), "e10", "invalid_max_tokens"},
      {"prompt beyond the context", generate_frame("e11", long_prompt, 5), "e11", "context_length_exceeded"},
      {"oversized frame", generate_frame("e12", std::string(20000, 'a'), 5), std::nullopt, "frame_too_large"},
      {"cancel of an unknown id", cancel_frame("ghost"), "ghost", "unknown_id"},
  };
}

// d. Each kind of bad input gets its typed error; the socket, and requests already streaming on
//    it, carry on untouched. The bad frames go out back to back while "good" and "dup" stream.
TEST(websocket, bad_input_gets_typed_errors_and_the_socket_keeps_working) {
  E2E_REQUIRE_MODEL();
  const std::string expected_good = expected_completion("Once upon a time", 400);
  const std::string expected_after = expected_completion("One day, Lily", 40);
  // The frame limit leaves room for a prompt far beyond the 512-token context (4 bytes a token).
  const temp_file config("pagedserve-e2e-config.json", R"({"server":{"max_frame_bytes":16384}})");
  server_process server({"--config", config.path().string()});
  ASSERT_TRUE(server.ready()) << server.error();
  ws_client client;
  E2E_ASSERT_OK(client.connect(server.port()));
  E2E_ASSERT_OK(client.send_text(generate_frame("good", "Once upon a time", 400)));
  E2E_ASSERT_OK(client.send_text(generate_frame("dup", "One day, Lily", 300, R"(,"ignore_eos":true)")));
  const std::vector<bad_input> bad = bad_inputs();
  for (const bad_input& b : bad) {
    SCOPED_TRACE(b.what);
    E2E_ASSERT_OK(b.binary ? client.send_binary(b.frame) : client.send_text(b.frame));
  }
  // The same socket still serves a valid request.
  E2E_ASSERT_OK(client.send_text(generate_frame("after", "One day, Lily", 40)));

  stream_collector frames;
  const int n_bad = static_cast<int>(bad.size());
  const bool finished = read_until(
      client, frames,
      [&] { return frames.done("good") && frames.done("dup") && frames.done("after") && frames.n_errors >= n_bad; },
      stream_timeout);
  expect_quiet(client, frames, "");
  ASSERT_TRUE(finished) << "good " << frames.done("good") << ", dup " << frames.done("dup") << ", after "
                        << frames.done("after") << ", errors " << frames.n_errors << " of " << n_bad;
  EXPECT_EQ(frames.n_errors, n_bad) << "one error per bad input, no more";

  std::vector<std::string> null_id_codes;  // errors for frames without a readable id come in order
  for (const server_frame& e : frames.null_id_errors) {
    null_id_codes.push_back(e.code);
    EXPECT_FALSE(e.message.empty()) << e.raw;
  }
  std::vector<std::string> expected_null_id_codes;
  for (const bad_input& b : bad) {
    SCOPED_TRACE(b.what);
    if (!b.id) {
      expected_null_id_codes.push_back(b.code);
      continue;
    }
    const request_log& log = frames[*b.id];
    ASSERT_EQ(log.errors.size(), 1u) << "expected one error frame for id '" << *b.id << "'";
    EXPECT_EQ(log.errors[0].code, b.code) << log.errors[0].raw;
    EXPECT_FALSE(log.errors[0].message.empty()) << log.errors[0].raw;
    if (*b.id != "dup") {
      EXPECT_EQ(log.n_token_frames, 0);
      EXPECT_TRUE(log.dones.empty()) << log.dones.front().raw;
    }
  }
  EXPECT_EQ(null_id_codes, expected_null_id_codes);

  const request_log& good = frames["good"];
  ASSERT_EQ(good.dones.size(), 1u);
  const std::int64_t good_tokens = good.dones[0].completion_tokens;
  expect_completed(frames, "good", expected_good, good_tokens < 400 ? "stop" : "length", good_tokens);
  expect_completed(frames, "after", expected_after, "length", 40);
  {
    SCOPED_TRACE("request 'dup': the original runs to its end");
    const request_log& dup = frames["dup"];
    ASSERT_EQ(dup.dones.size(), 1u);
    EXPECT_EQ(dup.dones[0].finish_reason, "length") << dup.dones[0].raw;
    EXPECT_EQ(dup.dones[0].completion_tokens, 300) << dup.dones[0].raw;
    EXPECT_EQ(dup.n_token_ids, 300);
    EXPECT_TRUE(dup.after_done.empty());
  }
  EXPECT_TRUE(frames.problems.empty()) << frames.problems.front();
  auto health = wait_for_idle(server.port(), std::chrono::seconds(2));
  ASSERT_TRUE(health) << health.error();
  EXPECT_TRUE(health->idle());
  client.close();
}

// e. A server that cannot load its model or tokenizer exits non-zero at once with one clear error line.
TEST(startup, bad_model_or_tokenizer_exits_with_one_error_line) {
  E2E_REQUIRE_MODEL();
  std::string head(1000, '\0');
  std::ifstream(model_path(), std::ios::binary).read(head.data(), 1000);
  const temp_file truncated("pagedserve-e2e-truncated.bin", head);
  std::string garbage;
  while (garbage.size() < 4096) garbage += "this is not a tokenizer file\n";
  const temp_file garbage_tokenizer("pagedserve-e2e-garbage-tok.bin", garbage);
  struct scenario {
    std::string name, model, tokenizer, mentions;
  };
  const std::vector<scenario> scenarios = {
      {"missing model", "/nonexistent/pagedserve/model.bin", tokenizer_path().string(), "/nonexistent/pagedserve"},
      {"truncated checkpoint", truncated.path().string(), tokenizer_path().string(), truncated.path().string()},
      {"missing tokenizer", model_path().string(), "/nonexistent/pagedserve/tok.bin", "/nonexistent/pagedserve"},
      {"garbage tokenizer", model_path().string(), garbage_tokenizer.path().string(),
       garbage_tokenizer.path().string()},
  };
  for (const scenario& s : scenarios) {
    SCOPED_TRACE(s.name);
    const process_result r = run_process({test::server_binary().string(), "serve", "--model", s.model, "--tokenizer",
                                          s.tokenizer, "--host", "127.0.0.1", "--port", "0"},
                                         std::chrono::seconds(5));
    EXPECT_FALSE(r.timed_out) << "still running after 5 s";
    EXPECT_TRUE(r.exited) << "killed by signal " << r.term_signal;
    EXPECT_NE(r.exit_code, 0);
    // The server listens before it loads and logs each phase that succeeded (info); the failure
    // itself is one line, and nothing else is a warning or an error.
    std::vector<std::string> lines;
    std::istringstream in(r.err);
    for (std::string line; std::getline(in, line);)
      if (line.find("] [error] ") != std::string::npos || line.find("] [warning] ") != std::string::npos ||
          line.find("] [critical] ") != std::string::npos)
        lines.push_back(line);
    ASSERT_EQ(lines.size(), 1u) << "stderr:\n" << r.err;
    EXPECT_NE(lines[0].find("error"), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find(s.mentions), std::string::npos) << "the error should name the file: " << lines[0];
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

// f. GET /health reports the engine; an unknown route is a 404 with an OpenAI-shaped error.
TEST(http, health_fields_and_unknown_route) {
  E2E_REQUIRE_MODEL();
  server_process server({"--kv-blocks", "64"});
  ASSERT_TRUE(server.ready()) << server.error();
  auto res = http_get(server.port(), "/health");
  ASSERT_TRUE(res) << res.error();
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->content_type, "application/json");
  auto health = parse_health(res->body);
  ASSERT_TRUE(health) << health.error();
  EXPECT_EQ(health->status, "ok");
  EXPECT_FALSE(health->model.empty());
  EXPECT_EQ(health->running, 0);
  EXPECT_EQ(health->waiting, 0);
  EXPECT_EQ(health->kv_blocks_total, 64);
  EXPECT_EQ(health->kv_blocks_free, 64);

  auto missing = http_get(server.port(), "/nope");
  ASSERT_TRUE(missing) << missing.error();
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->content_type, "application/json");
  simdjson::dom::parser parser;
  simdjson::dom::object error;
  ASSERT_EQ(parser.parse(missing->body)["error"].get(error), simdjson::SUCCESS) << missing->body;
  std::string_view message;
  ASSERT_EQ(error["message"].get(message), simdjson::SUCCESS) << missing->body;
  EXPECT_FALSE(message.empty());
}

}  // namespace
}  // namespace pagedserve::e2e
