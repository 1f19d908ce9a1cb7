// What an HTTP error from the hub tells the user (src/hub/hub_file_download.hpp).
#include <gtest/gtest.h>

#include "src/hub/hub_file_download.hpp"

namespace pagedserve {
namespace {

hub_http_hop hop(int status, std::map<std::string, std::string> headers = {}) {
  return hub_http_hop{"https://huggingface.co/api/models/o/m/revision/main", status, std::move(headers)};
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(hub_status_message, unauthorized_and_forbidden_say_how_to_give_a_token) {
  hub_settings s;
  const std::string no_token = hub_status_message(hop(401), "o/m (revision main)", s, "");
  EXPECT_TRUE(has(no_token, "o/m (revision main): 401")) << no_token;
  EXPECT_TRUE(has(no_token, "no token was sent: set HF_TOKEN")) << no_token;
  s.token = "hf_x";
  const std::string refused = hub_status_message(hop(401), "o/m", s, "");
  EXPECT_TRUE(has(refused, "refused")) << refused;
  const std::string gated = hub_status_message(hop(403, {{"x-error-message", "Access to model o/m is restricted"}}), "o/m", s, "");
  EXPECT_TRUE(has(gated, "403 Forbidden")) << gated;
  EXPECT_TRUE(has(gated, "Access to model o/m is restricted")) << gated;  // the hub's own words
  EXPECT_TRUE(has(gated, "terms")) << gated;
}

TEST(hub_status_message, not_found_names_what_is_missing) {
  const hub_settings s;
  EXPECT_TRUE(has(hub_status_message(hop(404, {{"x-error-code", "RevisionNotFound"}}), "o/m (revision v9)", s, ""),
                  "o/m (revision v9): revision not found"));
  EXPECT_TRUE(has(hub_status_message(hop(404, {{"x-error-code", "EntryNotFound"}}), "o/m/config.json", s, ""),
                  "o/m/config.json: file not found"));
  const std::string repo = hub_status_message(hop(404, {{"x-error-code", "RepoNotFound"}}), "o/m", s, "");
  EXPECT_TRUE(has(repo, "o/m: 404 Not Found")) << repo;
  EXPECT_TRUE(has(repo, "--revision")) << repo;
  const std::string html = hub_status_message(hop(502), "o/m", s, "<html>bad gateway</html>");
  EXPECT_TRUE(has(html, "HTTP 502")) << html;
  EXPECT_FALSE(has(html, "<html>")) << html;  // an error page is not quoted
}

}  // namespace
}  // namespace pagedserve
