// static_files: which URL paths name a file under the chat page's root, and with which type.
#include <gtest/gtest.h>

#include "src/net/static_files.hpp"

namespace pagedserve::net {
namespace {

TEST(static_files, maps_url_paths_to_checked_relative_paths) {
  EXPECT_EQ(static_files::relative_path("/"), "index.html");
  EXPECT_EQ(static_files::relative_path("/app.js"), "app.js");
  EXPECT_EQ(static_files::relative_path("/docs/"), "docs/index.html");
  EXPECT_EQ(static_files::relative_path("/img/logo-2_x.png"), "img/logo-2_x.png");
  EXPECT_EQ(static_files::relative_path("/%61pp.js"), "app.js");
}

TEST(static_files, refuses_traversal_and_odd_names) {
  for (const char* p : {"", "app.js", "/../x.js", "/a/../x.js", "/%2e%2e/x.js", "/%2E%2E%2Fx.js", "/..%2fx.js",
                        "/./x.js", "/.hidden.js", "//x.js", "/a//x.js", "/a\\x.js", "/%5c..%5cx.js", "/x.js%00.html",
                        "/x%20y.js", "/%", "/%4", "/%zz.js", "/x", "/x.exe", "/x.", "/.js", "/a/..", "/a/."})
    EXPECT_FALSE(static_files::relative_path(p).has_value()) << p;
}

TEST(static_files, content_types_by_extension) {
  EXPECT_EQ(static_files::content_type_for("index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(static_files::content_type_for("app.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(static_files::content_type_for("style.css"), "text/css; charset=utf-8");
  EXPECT_EQ(static_files::content_type_for("x.svg"), "image/svg+xml");
  EXPECT_EQ(static_files::content_type_for("x.sh"), "");
  EXPECT_EQ(static_files::content_type_for(".js"), "");
}

TEST(static_files, missing_root_serves_nothing) {
  const static_files web("/nonexistent/pagedserve-web");
  EXPECT_FALSE(web.available());
  ASSERT_FALSE(web.lookup("/").has_value());
  EXPECT_EQ(web.lookup("/").error(), static_error::not_found);
}

}  // namespace
}  // namespace pagedserve::net
