// Who may talk to a keyless server (net/access_policy.hpp): loopback names, listed hosts and origins,
// the server's own origin, JSON content types; with an API key only the key decides.
#include <gtest/gtest.h>

#include "src/net/access_policy.hpp"

namespace pagedserve::net {
namespace {

TEST(access_policy, loopback_authorities) {
  for (const char* a : {"localhost", "LOCALHOST:8080", "127.0.0.1", "127.0.0.1:80", "127.255.0.9:65535", "[::1]",
                        "[::1]:8080"})
    EXPECT_TRUE(is_loopback_authority(a)) << a;
  // DNS-rebinding names that merely start like loopback, other addresses, and malformed forms.
  for (const char* a : {"", "localhost.evil.example", "127.0.0.1.evil.example", "evil.example", "128.0.0.1",
                        "127.0.0", "127.0.0.1.5", "127.0.0.256", "0177.0.0.1", "127.0.0.01", "[::2]", "[::1",
                        "localhost:", "localhost:80x", "127.0.0.1:1234567", "::1", "[::ffff:7f00:1]:80"})
    EXPECT_FALSE(is_loopback_authority(a)) << a;
}

TEST(access_policy, origins_and_media_types) {
  EXPECT_EQ(origin_authority("http://127.0.0.1:8080"), "127.0.0.1:8080");
  EXPECT_EQ(origin_authority("HTTPS://app.example"), "app.example");
  EXPECT_EQ(origin_authority("null"), "");
  EXPECT_EQ(origin_authority("file://"), "");
  EXPECT_EQ(origin_authority("http://evil.example/127.0.0.1"), "");
  EXPECT_EQ(origin_authority("http://127.0.0.1@evil.example"), "");
  EXPECT_TRUE(is_json_media_type("application/json"));
  EXPECT_TRUE(is_json_media_type("Application/JSON; charset=utf-8"));
  EXPECT_TRUE(is_json_media_type(" application/json ;charset=UTF-8"));
  for (const char* t : {"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                        "application/jsonp", "application/json-patch+json", "text/json"})
    EXPECT_FALSE(is_json_media_type(t)) << t;
  EXPECT_EQ(refuse_content_type("text/plain")->status, 415);
  EXPECT_EQ(refuse_content_type("text/plain")->code, "unsupported_media_type");
  EXPECT_FALSE(refuse_content_type("application/json; charset=utf-8"));
}

TEST(access_policy, a_keyless_server_answers_loopback_and_listed_names_only) {
  server_config c;
  EXPECT_FALSE(refuse_origin(c, {"127.0.0.1:8080", "", false}));
  EXPECT_FALSE(refuse_origin(c, {"", "", false}));  // no Host: no browser sent it
  EXPECT_EQ(refuse_origin(c, {"evil.example:8080", "", false})->code, "host_not_allowed");
  EXPECT_EQ(refuse_origin(c, {"evil.example:8080", "", false})->status, 403);
  EXPECT_FALSE(refuse_origin(c, {"127.0.0.1:8080", "http://localhost:3000", true}));  // a loopback dev page
  EXPECT_EQ(refuse_origin(c, {"127.0.0.1:8080", "http://evil.example", true})->code, "origin_not_allowed");
  EXPECT_EQ(refuse_origin(c, {"127.0.0.1:8080", "null", true})->code, "origin_not_allowed");
  EXPECT_EQ(refuse_origin(c, {"127.0.0.1:8080", "", true})->code, "origin_not_allowed");

  c.allowed_hosts = "box.lan, other.lan:9000";
  c.allowed_origins = "http://app.example";
  EXPECT_FALSE(refuse_origin(c, {"box.lan", "", false}));
  EXPECT_FALSE(refuse_origin(c, {"BOX.lan:8080", "", false}));  // a name without a port: any port
  EXPECT_FALSE(refuse_origin(c, {"other.lan:9000", "", false}));
  EXPECT_TRUE(refuse_origin(c, {"other.lan:9001", "", false}));  // with a port: that port only
  EXPECT_TRUE(refuse_origin(c, {"box.lan.evil.example", "", false}));
  // The chat page served from box.lan sends its own origin.
  EXPECT_FALSE(refuse_origin(c, {"box.lan:8080", "http://box.lan:8080", true}));
  EXPECT_TRUE(refuse_origin(c, {"box.lan:8080", "http://box.lan:9999", true}));
  EXPECT_FALSE(refuse_origin(c, {"box.lan:8080", "http://app.example", true}));
  EXPECT_TRUE(refuse_origin(c, {"box.lan:8080", "http://app.example:81", true}));
  c.cors_allow_origin = "http://cors.example";  // given CORS headers, so accepted too
  EXPECT_FALSE(refuse_origin(c, {"box.lan:8080", "http://cors.example", true}));
  c.allowed_hosts = c.allowed_origins = "*";
  EXPECT_FALSE(refuse_origin(c, {"anything.example", "http://evil.example", true}));
}

TEST(access_policy, with_a_key_only_the_key_decides) {
  server_config c;
  EXPECT_FALSE(api_key_required(c, "/v1/completions"));
  c.api_key = "sk";
  EXPECT_FALSE(refuse_origin(c, {"evil.example", "http://evil.example", true}));
  for (const char* path : {"/v1/completions", "/v1/ws", "/tokenize", "/detokenize", "/metrics", "/version"})
    EXPECT_TRUE(api_key_required(c, path)) << path;
  EXPECT_FALSE(api_key_required(c, "/health"));
}

}  // namespace
}  // namespace pagedserve::net
