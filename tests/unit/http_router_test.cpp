// The HTTP route table (net/http_router.hpp): paths, methods (HEAD with GET) and the 405's Allow.
#include <gtest/gtest.h>

#include "src/net/http_router.hpp"

namespace pagedserve::net {
namespace {

TEST(http_router, finds_every_route_and_model_ids_under_models) {
  EXPECT_EQ(find_route("/health")->route, http_route::health);
  EXPECT_EQ(find_route("/version")->route, http_route::version);
  EXPECT_EQ(find_route("/metrics")->route, http_route::metrics);
  EXPECT_EQ(find_route("/v1/models")->route, http_route::models);
  EXPECT_EQ(find_route("/v1/models/some-model")->route, http_route::models);
  EXPECT_EQ(find_route("/v1/completions")->route, http_route::completions);
  EXPECT_EQ(find_route("/v1/chat/completions")->route, http_route::chat_completions);
  EXPECT_EQ(find_route("/tokenize")->route, http_route::tokenize);
  EXPECT_EQ(find_route("/detokenize")->route, http_route::detokenize);
  EXPECT_EQ(find_route("/v1/ws")->route, http_route::websocket);
  for (const char* path : {"/", "/index.html", "/v1", "/v1/", "/health/", "/v1/completions/x", "/HEALTH", ""})
    EXPECT_FALSE(find_route(path)) << path;
}

TEST(http_router, methods_with_head_going_with_get) {
  const route_spec health = *find_route("/health");
  EXPECT_TRUE(route_accepts(health, http::verb::get));
  EXPECT_TRUE(route_accepts(health, http::verb::head));
  EXPECT_FALSE(route_accepts(health, http::verb::post));
  EXPECT_EQ(route_allow(health), "GET, HEAD, OPTIONS");
  const route_spec completions = *find_route("/v1/completions");
  EXPECT_TRUE(route_accepts(completions, http::verb::post));
  EXPECT_FALSE(route_accepts(completions, http::verb::get));
  EXPECT_FALSE(route_accepts(completions, http::verb::head));
  EXPECT_EQ(route_allow(completions), "POST, OPTIONS");
}

}  // namespace
}  // namespace pagedserve::net
