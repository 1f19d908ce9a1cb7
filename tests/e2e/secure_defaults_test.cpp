// Secure defaults for a local server (issue 17 items 5 and 7) over a real socket. Without an API key,
// Host and Origin must be loopback, the server's own, or listed (--allowed-hosts, --allowed-origins,
// --cors-allow-origin), else 403; with a key, every route but /health and the chat page needs it,
// /tokenize and /detokenize included. A JSON POST without Content-Type: application/json is 415.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "e2e/e2e_check.hpp"
#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"
#include "support/ws_client.hpp"

namespace pagedserve::e2e {
namespace {

using namespace std::chrono_literals;

const std::string completion = R"({"prompt":"Once","max_tokens":2})";

// A request with exactly these headers (each "Name: value") and an optional JSON body.
std::string request(const std::string& method, const std::string& path, const std::vector<std::string>& headers,
                    const std::string& body = "") {
  std::string out = method + " " + path + " HTTP/1.1\r\n";
  for (const auto& h : headers) out += h + "\r\n";
  if (!body.empty()) out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  return out + "\r\n" + body;
}

std::string upgrade(const std::vector<std::string>& headers) {
  std::vector<std::string> all = {"Upgrade: websocket", "Connection: Upgrade",
                                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"};
  all.insert(all.end(), headers.begin(), headers.end());
  return request("GET", "/v1/ws", all);
}

struct answer {
  int status = 0;
  std::string code;  // error.code, empty when none
  std::string allow_origin;
};

answer ask(unsigned short port, const std::string& bytes) {
  auto r = http_exchange(port, bytes, 10s);
  EXPECT_TRUE(r) << r.error();
  if (!r) return {};
  answer a{r->status, "", r->header("access-control-allow-origin")};
  simdjson::dom::parser p;
  std::string_view code;
  if (r->status >= 400 && p.parse(r->body)["error"]["code"].get(code) == simdjson::SUCCESS) a.code = code;
  if (r->status >= 400) {  // every refusal is an OpenAI error object
    simdjson::dom::element e;
    EXPECT_EQ(p.parse(r->body).get(e), simdjson::SUCCESS) << r->body;
    EXPECT_TRUE(e["error"]["message"].is_string()) << r->body;
  }
  return a;
}

TEST(secure_defaults, a_keyless_server_answers_loopback_hosts_and_origins_only) {
  E2E_REQUIRE_MODEL();
  server_process server;
  ASSERT_TRUE(server.ready()) << server.error();
  const unsigned short port = server.port();
  const std::string self = "127.0.0.1:" + std::to_string(port);
  const std::string json = "Content-Type: application/json";
  for (const std::string host : {self, "localhost:" + std::to_string(port), std::string("LocalHost"), std::string("[::1]:1"),
                                 std::string("127.1.2.3")})
    EXPECT_EQ(ask(port, request("GET", "/health", {"Host: " + host})).status, 200) << host;
  for (const char* host : {"evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.evil.example:80"}) {
    const answer a = ask(port, request("POST", "/v1/completions", {std::string("Host: ") + host, json}, completion));
    EXPECT_EQ(a.status, 403) << host;
    EXPECT_EQ(a.code, "host_not_allowed") << host;
  }
  // DNS rebinding reads the page through the attacker's name: refused too.
  EXPECT_EQ(ask(port, request("GET", "/", {"Host: evil.example"})).status, 403);
  EXPECT_EQ(ask(port, request("GET", "/", {"Host: " + self})).status, 200);

  // Origins: the server's own page and loopback pages are fine, any other site is not.
  for (const std::string origin : {"http://" + self, std::string("http://localhost:3000"), std::string("https://127.0.0.1")})
    EXPECT_EQ(ask(port, request("POST", "/v1/completions", {"Host: " + self, json, "Origin: " + origin}, completion)).status,
              200)
        << origin;
  for (const char* origin : {"http://evil.example", "null", "http://127.0.0.1.evil.example"}) {
    const answer a =
        ask(port, request("POST", "/v1/completions", {"Host: " + self, json, std::string("Origin: ") + origin}, completion));
    EXPECT_EQ(a.status, 403) << origin;
    EXPECT_EQ(a.code, "origin_not_allowed") << origin;
  }
  // The WebSocket upgrade is checked the same way (browsers send Origin on every upgrade).
  EXPECT_EQ(ask(port, upgrade({"Host: " + self, "Origin: http://evil.example"})).status, 403);
  EXPECT_EQ(ask(port, upgrade({"Host: evil.example"})).status, 403);
  EXPECT_EQ(ask(port, upgrade({"Host: " + self, "Origin: http://" + self})).status, 101);
  ws_client fine;  // the test client sends Host 127.0.0.1:PORT and no Origin
  EXPECT_TRUE(fine.connect(port));
}

TEST(secure_defaults, json_posts_need_a_json_content_type) {
  E2E_REQUIRE_MODEL();
  server_process server;
  ASSERT_TRUE(server.ready()) << server.error();
  const unsigned short port = server.port();
  const std::string host = "Host: 127.0.0.1";
  for (const char* path : {"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"}) {
    for (const std::vector<std::string> headers :
         {std::vector<std::string>{host}, {host, "Content-Type: text/plain"},
          {host, "Content-Type: application/x-www-form-urlencoded"}, {host, "Content-Type: application/jsonp"}}) {
      const answer a = ask(port, request("POST", path, headers, completion));
      EXPECT_EQ(a.status, 415) << path << " " << headers.back();
      EXPECT_EQ(a.code, "unsupported_media_type") << path;
    }
  }
  EXPECT_EQ(ask(port, request("POST", "/v1/completions", {host, "Content-Type: application/json; charset=utf-8"},
                              completion)).status,
            200);
  EXPECT_EQ(ask(port, request("POST", "/tokenize", {host, "Content-Type: Application/JSON"}, R"({"prompt":"hi"})")).status,
            200);
}

TEST(secure_defaults, listed_hosts_and_origins_and_cors_origins_are_accepted) {
  E2E_REQUIRE_MODEL();
  server_process server({"--allowed-hosts", "box.lan, api.lan:9000", "--allowed-origins", "http://app.example",
                         "--cors-allow-origin", "http://cors.example"});
  ASSERT_TRUE(server.ready()) << server.error();
  const unsigned short port = server.port();
  const std::string json = "Content-Type: application/json";
  auto post = [&](const std::string& host, const std::string& origin) {
    std::vector<std::string> headers = {"Host: " + host, json};
    if (!origin.empty()) headers.push_back("Origin: " + origin);
    return ask(port, request("POST", "/v1/completions", headers, completion));
  };
  EXPECT_EQ(post("box.lan:8080", "").status, 200);
  EXPECT_EQ(post("api.lan:9000", "").status, 200);
  EXPECT_EQ(post("api.lan:9001", "").status, 403);
  EXPECT_EQ(post("other.lan", "").status, 403);
  EXPECT_EQ(post("box.lan:8080", "http://box.lan:8080").status, 200);  // the chat page served as box.lan
  EXPECT_EQ(post("box.lan:8080", "http://app.example").status, 200);
  EXPECT_EQ(post("box.lan:8080", "http://other.example").status, 403);
  // A CORS origin is accepted and gets its header; an allowed (non-CORS) origin gets none.
  const answer cors = post("box.lan", "http://cors.example");
  EXPECT_EQ(cors.status, 200);
  EXPECT_EQ(cors.allow_origin, "http://cors.example");
  EXPECT_EQ(post("box.lan", "http://app.example").allow_origin, "");
  EXPECT_EQ(ask(port, upgrade({"Host: box.lan", "Origin: http://app.example"})).status, 101);

  server_process open({"--allowed-hosts", "*", "--allowed-origins", "*"});
  ASSERT_TRUE(open.ready()) << open.error();
  EXPECT_EQ(ask(open.port(), request("POST", "/v1/completions", {"Host: anything.example", json, "Origin: http://x.example"},
                                     completion)).status,
            200);
}

TEST(secure_defaults, with_a_key_every_route_but_health_and_the_page_needs_it) {
  E2E_REQUIRE_MODEL();
  server_process server({"--api-key", "sk-test"});
  ASSERT_TRUE(server.ready()) << server.error();
  const unsigned short port = server.port();
  const std::string json = "Content-Type: application/json", key = "Authorization: Bearer sk-test";
  const std::string host = "Host: evil.example";  // with a key, the key decides, not the names
  struct route {
    const char* method;
    const char* path;
    const char* body;
  };
  for (const route& r : {route{"POST", "/tokenize", R"({"prompt":"hi"})"}, route{"POST", "/detokenize", R"({"tokens":[1]})"},
                         route{"GET", "/metrics", ""}, route{"GET", "/version", ""}, route{"GET", "/v1/models", ""},
                         route{"POST", "/v1/completions", R"({"prompt":"Once","max_tokens":2})"}}) {
    const answer refused = ask(port, request(r.method, r.path, {host, json}, r.body));
    EXPECT_EQ(refused.status, 401) << r.path;
    EXPECT_EQ(refused.code, "invalid_api_key") << r.path;
    EXPECT_EQ(ask(port, request(r.method, r.path, {host, json, key}, r.body)).status, 200) << r.path;
  }
  EXPECT_EQ(ask(port, request("GET", "/health", {host})).status, 200);
  EXPECT_EQ(ask(port, request("GET", "/", {host})).status, 200);  // the page asks the user for the key
  EXPECT_EQ(ask(port, upgrade({host, "Origin: http://evil.example"})).status, 401);
  EXPECT_EQ(ask(port, upgrade({host, "Origin: http://evil.example", key})).status, 101);
}

}  // namespace
}  // namespace pagedserve::e2e
