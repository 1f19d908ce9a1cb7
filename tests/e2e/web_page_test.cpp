// End-to-end tests of the chat page's static route against the real binary: GET / and the assets
// with their types and cache headers, 304 on a matching ETag, every traversal spelling (plain,
// percent-encoded, symlink) a 404, --web-root, and the API key offered as a WebSocket subprotocol
// (how a browser, which cannot set Authorization on a WebSocket, passes it).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"

namespace pagedserve::e2e {
namespace {

namespace fs = std::filesystem;

#define WEB_REQUIRE_MODEL()                      \
  do {                                           \
    PAGEDSERVE_REQUIRE_DATA(model_path());     \
    PAGEDSERVE_REQUIRE_DATA(tokenizer_path()); \
  } while (0)

const fs::path source_dir = PAGEDSERVE_SOURCE_DIR;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

raw_response get(unsigned short port, const std::string& target, const std::vector<std::string>& headers = {}) {
  auto r = http_exchange(port, http_get_bytes(target, headers));
  EXPECT_TRUE(r) << target << ": " << r.error();
  return r ? *r : raw_response{};
}

TEST(web_page, serves_the_page_and_its_assets) {
  WEB_REQUIRE_MODEL();
  server_process server;
  ASSERT_TRUE(server.ready()) << server.error();
  auto page = get(server.port(), "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.header("content-type"), "text/html; charset=utf-8");
  EXPECT_EQ(page.body, read_file(source_dir / "web" / "index.html"));
  EXPECT_NE(page.body.find(R"(<script type="module" src="app.js">)"), std::string::npos);
  EXPECT_EQ(page.header("cache-control"), "no-cache");
  EXPECT_EQ(page.header("x-content-type-options"), "nosniff");
  EXPECT_NE(page.header("content-security-policy").find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(get(server.port(), "/index.html").body, page.body);
  EXPECT_EQ(get(server.port(), "/?conversation=1").body, page.body);

  for (const auto& [name, type] : {std::pair{"app.js", "text/javascript; charset=utf-8"},
                                   {"markdown.js", "text/javascript; charset=utf-8"},
                                   {"connection.js", "text/javascript; charset=utf-8"},
                                   {"store.js", "text/javascript; charset=utf-8"},
                                   {"style.css", "text/css; charset=utf-8"}}) {
    auto asset = get(server.port(), std::string("/") + name);
    EXPECT_EQ(asset.status, 200) << name;
    EXPECT_EQ(asset.header("content-type"), type) << name;
    EXPECT_EQ(asset.body, read_file(source_dir / "web" / name)) << name;
  }

  // The browser revalidates (no-cache): an unchanged file is a bodiless 304.
  const std::string etag = page.header("etag");
  ASSERT_FALSE(etag.empty());
  auto same = get(server.port(), "/", {"If-None-Match: " + etag});
  EXPECT_EQ(same.status, 304);
  EXPECT_TRUE(same.body.empty());
  EXPECT_EQ(get(server.port(), "/", {"If-None-Match: \"other\""}).status, 200);

}

TEST(web_page, traversal_and_unknown_files_are_not_found) {
  WEB_REQUIRE_MODEL();
  server_process server;
  ASSERT_TRUE(server.ready()) << server.error();
  const std::string cmake = read_file(source_dir / "CMakeLists.txt");
  ASSERT_FALSE(cmake.empty());
  for (const std::string target :
       {"/../CMakeLists.txt", "/%2e%2e/CMakeLists.txt", "/%2E%2E%2FCMakeLists.txt", "/..%2fCMakeLists.txt",
        "/web/../../CMakeLists.txt", "/./index.html", "//etc/passwd", "/%2fetc%2fpasswd", "/..%5cCMakeLists.txt",
        "/app.js%00.html", "/%", "/%zz", "/nope.js", "/nope/", "/web/index.html", "/README.md", "/.hidden.js",
        "/index.html/../../CMakeLists.txt"}) {
    auto r = get(server.port(), target);
    EXPECT_EQ(r.status, 404) << target;
    EXPECT_EQ(r.header("content-type"), "application/json") << target;
    EXPECT_EQ(r.body.find("project(pagedserve"), std::string::npos) << target;
  }
  // The API and the status routes keep their own answers.
  EXPECT_EQ(get(server.port(), "/v1/nope.js").status, 404);
  EXPECT_EQ(get(server.port(), "/health").header("content-type"), "application/json");
  auto post = http_exchange(server.port(), http_post_bytes("/", "{}"));
  ASSERT_TRUE(post) << post.error();
  EXPECT_EQ(post->status, 404);
}

TEST(web_page, web_root_flag_and_symlinks_out_of_it) {
  WEB_REQUIRE_MODEL();
  const fs::path root = fs::temp_directory_path() / ("pagedserve-web-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "sub");
  std::ofstream(root / "index.html") << "<!doctype html><title>custom</title>";
  std::ofstream(root / "sub" / "index.html") << "sub page";
  fs::create_symlink(source_dir / "CMakeLists.txt", root / "escape.txt");
  fs::create_symlink(source_dir / "web" / "style.css", root / "linked.css");
  {
    server_process server({"--web-root", root.string()});
    ASSERT_TRUE(server.ready()) << server.error();
    EXPECT_EQ(get(server.port(), "/").body, "<!doctype html><title>custom</title>");
    EXPECT_EQ(get(server.port(), "/sub/").body, "sub page");
    EXPECT_EQ(get(server.port(), "/escape.txt").status, 404);  // a link out of the root
    EXPECT_EQ(get(server.port(), "/linked.css").status, 404);  // even to another served file
    EXPECT_EQ(get(server.port(), "/app.js").status, 404);
  }
  {
    server_process server({"--web-root", (root / "absent").string()});
    ASSERT_TRUE(server.ready()) << server.error();
    EXPECT_EQ(get(server.port(), "/").status, 404);
    EXPECT_EQ(get(server.port(), "/health").status, 200);
  }
  fs::remove_all(root);
}

TEST(web_page, api_key_as_websocket_subprotocol) {
  WEB_REQUIRE_MODEL();
  // base64url("k\xff?>") is "a_8_Pg": the key's bytes need not be HTTP token characters.
  server_process server({"--api-key", "k\xff?>"});
  ASSERT_TRUE(server.ready()) << server.error();
  const std::string upgrade = "GET /v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";
  auto exchange = [&](const std::string& protocols) {
    auto r = http_exchange(server.port(), upgrade + "Sec-WebSocket-Protocol: " + protocols + "\r\n\r\n",
                           std::chrono::seconds(5));
    EXPECT_TRUE(r) << protocols << ": " << r.error();
    return r ? *r : raw_response{};
  };
  auto right = exchange("pagedserve, bearer.a_8_Pg");
  EXPECT_EQ(right.status, 101);
  EXPECT_EQ(right.header("sec-websocket-protocol"), "pagedserve");  // the key is never echoed
  EXPECT_EQ(exchange("bearer.a_8_Pg,pagedserve").status, 101);
  auto unnamed = exchange("bearer.a_8_Pg");
  EXPECT_EQ(unnamed.status, 101);
  EXPECT_EQ(unnamed.header("sec-websocket-protocol"), "");
  EXPECT_EQ(exchange("pagedserve, bearer.a_8_Ph").status, 401);
  EXPECT_EQ(exchange("pagedserve, bearer.").status, 401);
  EXPECT_EQ(exchange("pagedserve, a_8_Pg").status, 401);
  EXPECT_EQ(exchange("pagedserve").status, 401);
  // Only upgrades take the key this way: plain HTTP still needs Authorization.
  auto models = http_exchange(server.port(), http_get_bytes("/v1/models", {"Sec-WebSocket-Protocol: bearer.a_8_Pg"}));
  ASSERT_TRUE(models) << models.error();
  EXPECT_EQ(models->status, 401);
}

}  // namespace
}  // namespace pagedserve::e2e
