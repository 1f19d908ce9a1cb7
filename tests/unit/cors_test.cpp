// CORS (net/cors.hpp): the Access-Control-Allow-Origin a response names, and the preflight's headers.
#include <gtest/gtest.h>

#include "src/net/cors.hpp"

namespace pagedserve::net {
namespace {

TEST(cors, allow_origin_is_none_any_or_a_listed_origin) {
  EXPECT_EQ(cors_origin_for("", "http://a.example"), "");
  EXPECT_EQ(cors_origin_for("*", "http://a.example"), "*");
  EXPECT_EQ(cors_origin_for("*", ""), "*");
  const std::string_view list = "http://a.example, http://b.example:8080 ,http://c.example";
  EXPECT_EQ(cors_origin_for(list, "http://a.example"), "http://a.example");
  EXPECT_EQ(cors_origin_for(list, "http://b.example:8080"), "http://b.example:8080");
  EXPECT_EQ(cors_origin_for(list, "http://c.example"), "http://c.example");
  EXPECT_EQ(cors_origin_for(list, "http://d.example"), "");
  EXPECT_EQ(cors_origin_for(list, ""), "");
}

TEST(cors, preflight_grants_only_with_an_allowed_origin) {
  EXPECT_EQ(cors_preflight_headers("", "X-Custom"), (header_list{{"Allow", "GET, HEAD, POST, OPTIONS"}}));
  const header_list granted = cors_preflight_headers("*", "");
  ASSERT_EQ(granted.size(), 4u);
  EXPECT_EQ(granted[2].first, "Access-Control-Allow-Headers");
  EXPECT_EQ(granted[2].second, "Authorization, Content-Type");
  EXPECT_EQ(cors_preflight_headers("*", "X-Custom")[2].second, "X-Custom");
}

}  // namespace
}  // namespace pagedserve::net
