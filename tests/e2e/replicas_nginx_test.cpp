// Two replicas behind Debian's nginx with the shipped configuration (config/nginx/): streaming over
// WebSocket and SSE through the proxy, one session key kept on one replica (prefix-cache hits grow
// there, the other sees nothing), a replica killed mid-stream failing exactly the requests it held
// while later ones go to the other, and a replica stopped with SIGTERM draining while nginx sends
// new requests elsewhere. Skips, saying so, where nginx is not installed (scripts/install-deps.sh
// installs nginx-light) or the model files are absent.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <memory>

#include "e2e/e2e_check.hpp"
#include "e2e/nginx_process.hpp"
#include "support/openai_http_client.hpp"
#include "e2e/stream_collector.hpp"
#include "api/ws_protocol.hpp"

namespace pagedserve::e2e {
namespace {

constexpr auto io_timeout = std::chrono::seconds(30);  // any one read; nothing may hang past it
constexpr int long_tokens = 400;                        // a generation still running when we act

using header_list = std::vector<std::pair<std::string, std::string>>;

header_list session(const std::string& key) { return {{"X-Session-Id", key}}; }
std::vector<std::string> session_header(const std::string& key) { return {"X-Session-Id: " + key}; }

std::string completion_body(const std::string& prompt, int max_tokens, bool stream) {
  std::string body = R"({"prompt":)";
  json_append_string(body, prompt);
  return body + R"(,"max_tokens":)" + std::to_string(max_tokens) + R"(,"temperature":0,"ignore_eos":true,"stream":)" +
         (stream ? R"(true,"stream_options":{"include_usage":true})" : "false") + "}";
}

// GET /metrics of one replica, parsed.
std::map<std::string, double> scrape(unsigned short port) {
  auto r = http_get(port, "/metrics");
  EXPECT_TRUE(r && r->status == 200) << (r ? r->body : r.error());
  return r ? parse_metrics(r->body) : std::map<std::string, double>{};
}

// What the engine of one replica has done so far, read from its /metrics.
struct replica_counts {
  double finished = 0;     // request_success_total over every finish reason
  double prefix_hits = 0;  // prompt tokens found in the prefix cache
};

replica_counts counts(unsigned short port, const std::string& replica) {
  const auto m = scrape(port);
  const std::string labels = "{model_name=\"stories260K\",replica=\"" + replica + "\"";
  replica_counts c;
  for (const char* reason : {"stop", "length", "abort"}) {
    const auto it = m.find("pagedserve:request_success_total" + labels + ",finished_reason=\"" + reason + "\"}");
    EXPECT_NE(it, m.end()) << "no request_success_total series labelled replica=\"" << replica << "\"";
    if (it != m.end()) c.finished += it->second;
  }
  const auto hits = m.find("pagedserve:prefix_cache_hits_total" + labels + "}");
  if (hits != m.end()) c.prefix_hits = hits->second;
  return c;
}

// How a streamed response through the proxy ended.
struct stream_end {
  bool completed = false;  // WebSocket done frame, or SSE "[DONE]" and the last chunk
  std::string how;         // what ended it otherwise (error frame, closed socket, ...)
  std::string text;        // generated text
  std::int64_t completion_tokens = -1;
};

// One streamed completion over SSE on its own connection: the head and first event read by begin(),
// the rest by finish().
class sse_stream {
 public:
  bool begin(unsigned short port, const std::string& prompt, int max_tokens, const std::vector<std::string>& headers) {
    if (!conn_.connect(port) || !conn_.send(http_post_bytes("/v1/completions", completion_body(prompt, max_tokens, true),
                                                            headers))) {
      error_ = "connect or send failed";
      return false;
    }
    auto head = conn_.read_head(io_timeout);
    if (!head || head->status != 200) {
      error_ = head ? "status " + std::to_string(head->status) : head.error();
      return false;
    }
    auto first = conn_.read_chunk(io_timeout);
    if (!first || first->empty()) {
      error_ = first ? "empty body" : first.error();
      return false;
    }
    body_ = *first;
    return true;
  }
  stream_end finish() {
    stream_end end;
    for (;;) {
      auto chunk = conn_.read_chunk(io_timeout);
      if (!chunk) {
        end.how = chunk.error();
        break;
      }
      if (chunk->empty()) {
        const auto events = sse_data(body_);
        end.completed = !events.empty() && events.back() == "[DONE]";
        end.how = end.completed ? "done" : "ended without [DONE]";
        break;
      }
      body_ += *chunk;
    }
    for (const std::string& e : sse_data(body_)) {
      simdjson::dom::parser p;
      std::string_view t;
      std::int64_t n = 0;
      if (p.parse(e)["choices"].at(0)["text"].get(t) == simdjson::SUCCESS) end.text += t;
      if (p.parse(e)["usage"]["completion_tokens"].get(n) == simdjson::SUCCESS) end.completion_tokens = n;
      if (e.find("\"error\"") != std::string::npos) end.completed = false, end.how = "error event: " + e;
    }
    return end;
  }
  const std::string& error() const { return error_; }

 private:
  http_conn conn_;
  std::string body_, error_;
};

// One generation over its own WebSocket through the proxy.
class ws_stream_request {
 public:
  bool begin(unsigned short port, const std::string& prompt, int max_tokens, header_list headers) {
    if (auto c = client_.connect(port, "/v1/ws", std::chrono::seconds(5), std::move(headers)); !c) {
      error_ = c.error();
      return false;
    }
    if (auto s = client_.send_text(generate_frame("g", prompt, max_tokens, R"(,"ignore_eos":true)")); !s) {
      error_ = s.error();
      return false;
    }
    // Streaming: the first token frame is here.
    if (!read_until(client_, frames_, [&] { return frames_["g"].n_token_frames > 0 || frames_.n_errors > 0; },
                    io_timeout) ||
        frames_["g"].n_token_frames == 0) {
      error_ = "no token frame: " + (frames_.problems.empty() ? std::string("timeout") : frames_.problems.back());
      return false;
    }
    return true;
  }
  stream_end finish() {
    const auto ended = [&] { return frames_.done("g") || frames_.n_errors > 0 || !frames_.problems.empty(); };
    read_until(client_, frames_, ended, io_timeout);
    stream_end end;
    end.text = frames_["g"].text;
    end.completed = frames_.done("g") && frames_.n_errors == 0;
    if (end.completed) end.completion_tokens = frames_["g"].dones.front().completion_tokens;
    end.how = end.completed            ? "done"
              : frames_.last_error     ? "error frame: " + frames_.last_error->raw
              : !frames_.problems.empty() ? frames_.problems.back()
                                          : "timeout";
    return end;
  }
  const std::string& error() const { return error_; }

 private:
  ws_client client_;
  stream_collector frames_;
  std::string error_;
};

// A short non-streamed completion through the proxy; its status and body.
std::expected<raw_response, std::string> complete(unsigned short port, const std::string& prompt,
                                                  const std::vector<std::string>& headers = {}) {
  return http_exchange(port, http_post_bytes("/v1/completions", completion_body(prompt, 8, false), headers), io_timeout);
}

class replicas_behind_nginx : public ::testing::Test {
 protected:
  void SetUp() override {
    E2E_REQUIRE_MODEL();
    const auto nginx = nginx_binary();
    if (nginx.empty()) GTEST_SKIP() << "nginx is not installed: skipping (scripts/install-deps.sh installs nginx-light)";
    replica_[0] = std::make_unique<server_process>(std::vector<std::string>{"--replica-name", names_[0]});
    replica_[1] = std::make_unique<server_process>(std::vector<std::string>{"--replica-name", names_[1]});
    for (const auto& r : replica_) ASSERT_TRUE(r->ready()) << r->error();
    nginx_ = std::make_unique<nginx_process>(nginx, std::vector<unsigned short>{replica_[0]->port(), replica_[1]->port()});
    ASSERT_TRUE(nginx_->ready()) << nginx_->error();
  }
  void TearDown() override {
    if (HasFailure() && nginx_) std::cerr << "--- nginx access log ---\n" << nginx_->access_log();
  }

  unsigned short proxy() const { return nginx_->port(); }
  replica_counts counts_of(int i) const { return counts(replica_[i]->port(), names_[i]); }
  // A session key that nginx sends to replica i, found by sending one-token probes.
  std::string key_for(int i) {
    for (int k = 0; k < 64; ++k) {
      const std::string key = "conversation-" + std::to_string(k);
      const double before = counts_of(i).finished;
      auto r = complete(proxy(), "Hi", session_header(key));
      EXPECT_TRUE(r && r->status == 200) << (r ? r->body : r.error());
      if (counts_of(i).finished > before) return key;
    }
    ADD_FAILURE() << "no key among 64 hashes to replica " << names_[i];
    return {};
  }

  const std::string names_[2] = {"replica-a", "replica-b"};
  std::unique_ptr<server_process> replica_[2];
  std::unique_ptr<nginx_process> nginx_;
};

// WebSocket (upgrade proxied) and SSE (unbuffered) streams through nginx carry the same greedy text
// as a replica asked directly.
TEST_F(replicas_behind_nginx, websocket_and_sse_stream_through_the_proxy) {
  const std::string prompt = "Once upon a time";
  ws_stream_request direct;
  ASSERT_TRUE(direct.begin(replica_[0]->port(), prompt, 48, {})) << direct.error();
  const stream_end expected = direct.finish();
  ASSERT_TRUE(expected.completed) << expected.how;

  ws_stream_request ws;
  ASSERT_TRUE(ws.begin(proxy(), prompt, 48, {})) << ws.error();
  const stream_end over_ws = ws.finish();
  EXPECT_TRUE(over_ws.completed) << over_ws.how;
  EXPECT_EQ(over_ws.completion_tokens, 48);
  EXPECT_EQ(over_ws.text, expected.text);

  sse_stream sse;
  ASSERT_TRUE(sse.begin(proxy(), prompt, 48, {})) << sse.error();
  const stream_end over_sse = sse.finish();
  EXPECT_TRUE(over_sse.completed) << over_sse.how;
  EXPECT_EQ(over_sse.text, expected.text);

  // Several requests on one socket through the proxy, told apart by id.
  ws_client multi;
  E2E_ASSERT_OK(multi.connect(proxy()));
  for (const char* id : {"x", "y", "z"}) E2E_ASSERT_OK(multi.send_text(generate_frame(id, prompt, 48)));
  stream_collector frames;
  ASSERT_TRUE(read_until(multi, frames, [&] { return frames.done("x") && frames.done("y") && frames.done("z"); },
                         io_timeout));
  for (const char* id : {"x", "y", "z"}) EXPECT_EQ(frames[id].text, expected.text) << id;
  EXPECT_TRUE(frames.problems.empty()) << frames.problems.front();
}

// 20 requests of one conversation (one X-Session-Id; HTTP, SSE and WebSocket) all land on one
// replica, whose prefix cache then serves the shared history; the other replica sees none of them.
// Requests without a key are spread by load.
TEST_F(replicas_behind_nginx, one_session_key_stays_on_one_replica) {
  const replica_counts before[2] = {counts_of(0), counts_of(1)};
  const std::string key = "conversation-42";
  // A conversation: each turn repeats the history (several full KV blocks) and adds a line.
  std::string history =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. "
      "One day, she saw a big red ball in the park and ran to get it.";
  ws_client ws;
  E2E_ASSERT_OK(ws.connect(proxy(), "/v1/ws", std::chrono::seconds(5), session(key)));
  stream_collector frames;
  for (int turn = 0; turn < 20; ++turn) {
    history += " Turn " + std::to_string(turn) + ".";
    SCOPED_TRACE("turn " + std::to_string(turn));
    if (turn % 4 == 3) {  // over the session's WebSocket
      const std::string id = "t" + std::to_string(turn);
      E2E_ASSERT_OK(ws.send_text(generate_frame(id, history, 8, R"(,"ignore_eos":true)")));
      ASSERT_TRUE(read_until(ws, frames, [&] { return frames.done(id) || frames.n_errors > 0; }, io_timeout));
      ASSERT_TRUE(frames.done(id)) << frames.last_error->raw;
    } else {  // OpenAI API, streamed every other turn
      auto r = http_exchange(proxy(), http_post_bytes("/v1/completions", completion_body(history, 8, turn % 2 == 0),
                                                      session_header(key)),
                             io_timeout);
      ASSERT_TRUE(r) << r.error();
      ASSERT_EQ(r->status, 200) << r->body;
    }
  }
  const replica_counts after[2] = {counts_of(0), counts_of(1)};
  const int chosen = after[0].finished > before[0].finished ? 0 : 1;
  const int other = 1 - chosen;
  EXPECT_EQ(after[chosen].finished - before[chosen].finished, 20) << names_[chosen] << " served the conversation";
  EXPECT_EQ(after[other].finished - before[other].finished, 0) << names_[other] << " must see none of it";
  // Each turn after the first finds at least the first two blocks (32 tokens) of history cached.
  EXPECT_GE(after[chosen].prefix_hits - before[chosen].prefix_hits, 19 * 32);
  EXPECT_EQ(after[other].prefix_hits - before[other].prefix_hits, 0);

  // Without a key: least connections, round robin between equals; both replicas get some.
  for (int i = 0; i < 10; ++i) {
    auto r = complete(proxy(), "Once upon a time");
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : r.error());
  }
  const replica_counts spread[2] = {counts_of(0), counts_of(1)};
  EXPECT_GE(spread[0].finished - after[0].finished, 1);
  EXPECT_GE(spread[1].finished - after[1].finished, 1);
  EXPECT_EQ(spread[0].finished + spread[1].finished - after[0].finished - after[1].finished, 10);
}

// SIGKILL one replica while WebSocket and SSE streams run on both: each stream it held ends with an
// error at the client (nothing hangs), the other replica's streams finish, and every later request,
// with the dead replica's session key or none, succeeds on the survivor.
TEST_F(replicas_behind_nginx, a_killed_replica_fails_only_the_requests_it_held) {
  const std::string key_victim = key_for(0), key_survivor = key_for(1);
  ASSERT_FALSE(key_victim.empty() || key_survivor.empty());
  const std::string prompt = "One day, Lily went to the park";
  constexpr int n_each = 3;  // WebSocket and SSE streams on the victim
  std::vector<std::unique_ptr<ws_stream_request>> ws_victim;
  std::vector<std::unique_ptr<sse_stream>> sse_victim;
  for (int i = 0; i < n_each; ++i) {
    ws_victim.push_back(std::make_unique<ws_stream_request>());
    ASSERT_TRUE(ws_victim.back()->begin(proxy(), prompt, long_tokens, session(key_victim))) << ws_victim.back()->error();
    sse_victim.push_back(std::make_unique<sse_stream>());
    ASSERT_TRUE(sse_victim.back()->begin(proxy(), prompt, long_tokens, session_header(key_victim)))
        << sse_victim.back()->error();
  }
  ws_stream_request ws_survivor;
  ASSERT_TRUE(ws_survivor.begin(proxy(), prompt, long_tokens, session(key_survivor))) << ws_survivor.error();
  sse_stream sse_survivor;
  ASSERT_TRUE(sse_survivor.begin(proxy(), prompt, long_tokens, session_header(key_survivor))) << sse_survivor.error();

  // Every victim stream is still generating (400 tokens each) when the replica dies.
  auto held = get_health(replica_[0]->port());
  ASSERT_TRUE(held) << held.error();
  ASSERT_EQ(held->running + held->waiting, 2 * n_each) << "the victim's streams ended before the kill";
  replica_[0]->signal(SIGKILL);

  for (auto& s : ws_victim) {
    const stream_end end = s->finish();
    EXPECT_FALSE(end.completed) << "a WebSocket stream of the killed replica completed";
    EXPECT_NE(end.how, "timeout") << "a WebSocket stream of the killed replica hung";
  }
  for (auto& s : sse_victim) {
    const stream_end end = s->finish();
    EXPECT_FALSE(end.completed) << "an SSE stream of the killed replica completed";
    EXPECT_NE(end.how, "reading a chunk size: timeout") << "an SSE stream of the killed replica hung";
  }
  const stream_end ws_ok = ws_survivor.finish(), sse_ok = sse_survivor.finish();
  EXPECT_TRUE(ws_ok.completed) << ws_ok.how;
  EXPECT_EQ(ws_ok.completion_tokens, long_tokens);
  EXPECT_TRUE(sse_ok.completed) << sse_ok.how;
  EXPECT_EQ(sse_ok.completion_tokens, long_tokens);

  // Later requests: the dead replica's key (hash pool), no key (least-connections pool), streamed
  // or not, over both APIs. Connection refusals are retried on the survivor.
  const double survivor_before = counts_of(1).finished;
  for (const std::string& key : {key_victim, std::string(), key_victim, std::string()}) {
    const auto headers = key.empty() ? std::vector<std::string>{} : session_header(key);
    auto r = complete(proxy(), "Once upon a time", headers);
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->status, 200) << r->body;
    sse_stream sse;
    ASSERT_TRUE(sse.begin(proxy(), prompt, 16, headers)) << sse.error();
    EXPECT_TRUE(sse.finish().completed);
    ws_stream_request ws;
    ASSERT_TRUE(ws.begin(proxy(), prompt, 16, key.empty() ? header_list{} : session(key))) << ws.error();
    EXPECT_TRUE(ws.finish().completed);
  }
  EXPECT_EQ(counts_of(1).finished - survivor_before, 12);
}

// SIGTERM: the replica drains (its streams finish, /health says draining, it exits 0) while nginx
// sends every new request, keyed to it or not, to the other replica.
TEST_F(replicas_behind_nginx, a_stopped_replica_drains_and_new_requests_go_to_the_other) {
  const std::string key_stopped = key_for(0);
  ASSERT_FALSE(key_stopped.empty());
  const std::string prompt = "One day, Lily went to the park";
  ws_stream_request ws_running;
  ASSERT_TRUE(ws_running.begin(proxy(), prompt, long_tokens, session(key_stopped))) << ws_running.error();
  sse_stream sse_running;
  ASSERT_TRUE(sse_running.begin(proxy(), prompt, long_tokens, session_header(key_stopped))) << sse_running.error();
  replica_[0]->signal(SIGTERM);
  ASSERT_TRUE(replica_[0]->wait_for_log("draining", std::chrono::seconds(10))) << replica_[0]->log();

  const double other_before = counts_of(1).finished;
  for (const std::string& key : {key_stopped, std::string()}) {
    const auto headers = key.empty() ? std::vector<std::string>{} : session_header(key);
    auto r = complete(proxy(), "Once upon a time", headers);
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->status, 200) << r->body;
    ws_stream_request ws;
    ASSERT_TRUE(ws.begin(proxy(), prompt, 16, key.empty() ? header_list{} : session(key))) << ws.error();
    EXPECT_TRUE(ws.finish().completed);
  }
  EXPECT_EQ(counts_of(1).finished - other_before, 4);

  const stream_end ws_end = ws_running.finish(), sse_end = sse_running.finish();
  EXPECT_TRUE(ws_end.completed) << ws_end.how;
  EXPECT_EQ(ws_end.completion_tokens, long_tokens);
  EXPECT_TRUE(sse_end.completed) << sse_end.how;
  EXPECT_EQ(sse_end.completion_tokens, long_tokens);
  const process_result stopped = replica_[0]->wait_exit(std::chrono::seconds(20));
  EXPECT_TRUE(stopped.exited && stopped.exit_code == 0) << stopped.err;
}

// Unnamed, a replica is "<hostname>:<port>" in /health and on its /metrics series.
TEST(replica_name, defaults_to_hostname_and_port) {
  E2E_REQUIRE_MODEL();
  server_process server({"--replica-name", ""});
  ASSERT_TRUE(server.ready()) << server.error();
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  const std::string name = std::string(host) + ":" + std::to_string(server.port());
  auto health = http_get(server.port(), "/health");
  ASSERT_TRUE(health) << health.error();
  simdjson::dom::parser parser;
  std::string_view replica;
  ASSERT_EQ(parser.parse(health->body)["replica"].get(replica), simdjson::SUCCESS) << health->body;
  EXPECT_EQ(replica, name);
  EXPECT_TRUE(scrape(server.port()).contains("pagedserve:num_requests_running{model_name=\"stories260K\",replica=\"" +
                                             name + "\"}"));
}

}  // namespace
}  // namespace pagedserve::e2e
