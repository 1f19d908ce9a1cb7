// URL, Location and header parsing for hub downloads (src/hub/hub_url.hpp).
#include <gtest/gtest.h>

#include "src/hub/hub_url.hpp"

namespace pagedserve {
namespace {

TEST(hub_url, parses_scheme_host_port_and_target) {
  auto u = hub_url_parse("https://HuggingFace.co/api/models/Qwen/Qwen3-0.6B/revision/main?blobs=true");
  ASSERT_TRUE(u) << u.error();
  EXPECT_EQ(u->scheme, "https");
  EXPECT_EQ(u->host, "huggingface.co");
  EXPECT_EQ(u->port, "443");
  EXPECT_EQ(u->target, "/api/models/Qwen/Qwen3-0.6B/revision/main?blobs=true");
  EXPECT_EQ(u->origin(), "https://huggingface.co");

  u = hub_url_parse("http://127.0.0.1:8123");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->port, "8123");
  EXPECT_EQ(u->target, "/");
  EXPECT_EQ(u->origin(), "http://127.0.0.1:8123");
  u = hub_url_parse("http://[::1]:9000/x#frag");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->target, "/x");
  EXPECT_EQ(u->origin(), "http://[::1]:9000");
  EXPECT_EQ(hub_url_parse("http://h:80/a")->origin(), "http://h");  // default port left out

  EXPECT_FALSE(hub_url_parse("ftp://example.com/x"));
  EXPECT_FALSE(hub_url_parse("huggingface.co/x"));
  EXPECT_FALSE(hub_url_parse("http://:80/x"));
  EXPECT_FALSE(hub_url_parse("http://h:0/x"));
  EXPECT_FALSE(hub_url_parse("http://h:99999/x"));
  EXPECT_FALSE(hub_url_parse("http://h:8a/x"));
}

TEST(hub_url, resolves_every_kind_of_location) {
  const hub_url base = *hub_url_parse("https://huggingface.co/org/m/resolve/abc/sub/config.json?x=1");
  EXPECT_EQ(hub_url_resolve(base, "https://cdn-lfs.hf.co/repos/aa/bb?sig=1")->str(), "https://cdn-lfs.hf.co/repos/aa/bb?sig=1");
  EXPECT_EQ(hub_url_resolve(base, "//cdn.example/x")->str(), "https://cdn.example/x");
  EXPECT_EQ(hub_url_resolve(base, "/api/resolve-cache/models/org/m/abc/config.json")->str(),
            "https://huggingface.co/api/resolve-cache/models/org/m/abc/config.json");
  EXPECT_EQ(hub_url_resolve(base, "other.json")->str(), "https://huggingface.co/org/m/resolve/abc/sub/other.json");
  EXPECT_FALSE(hub_url_resolve(base, ""));
  EXPECT_TRUE(hub_location_is_relative("/a/b"));
  EXPECT_TRUE(hub_location_is_relative("b"));
  EXPECT_FALSE(hub_location_is_relative("http://x/b"));
  EXPECT_FALSE(hub_location_is_relative("//x/b"));
}

TEST(hub_url, quotes_paths_and_revisions) {
  EXPECT_EQ(hub_url_quote("sub dir/model-00001-of-00002.safetensors", true), "sub%20dir/model-00001-of-00002.safetensors");
  EXPECT_EQ(hub_url_quote("refs/pr/1", false), "refs%2Fpr%2F1");
  EXPECT_EQ(hub_url_quote("a~b_c.d", false), "a~b_c.d");
  EXPECT_EQ(hub_url_quote("\xc3\xa9", true), "%C3%A9");
}

TEST(hub_url, normalizes_etags_as_huggingface_hub) {
  EXPECT_EQ(hub_etag_normalize("\"a1b2\""), "a1b2");
  EXPECT_EQ(hub_etag_normalize("W/\"a1b2\""), "a1b2");
  EXPECT_EQ(hub_etag_normalize("a1b2"), "a1b2");
  EXPECT_EQ(hub_etag_normalize(""), "");
}

TEST(hub_url, parses_content_range_and_sizes) {
  auto r = content_range_parse("bytes 100-199/1000");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 100u);
  EXPECT_EQ(r->last, 199u);
  EXPECT_EQ(r->total, 1000u);
  r = content_range_parse("bytes 0-9/*");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->total);
  EXPECT_FALSE(content_range_parse("bytes 10-5/100"));
  EXPECT_FALSE(content_range_parse("bytes 0-99/50"));
  EXPECT_FALSE(content_range_parse("items 0-9/10"));
  EXPECT_FALSE(content_range_parse("bytes x-9/10"));
  EXPECT_EQ(header_u64(" 1234 "), 1234u);
  EXPECT_EQ(header_u64("18446744073709551615"), 18446744073709551615ull);
  EXPECT_FALSE(header_u64(""));
  EXPECT_FALSE(header_u64("12a"));
  EXPECT_FALSE(header_u64("-1"));
}

}  // namespace
}  // namespace pagedserve
