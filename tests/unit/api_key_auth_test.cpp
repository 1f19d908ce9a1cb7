// The API key check (net/api_key_auth.hpp) and the base64url it expects on WebSocket upgrades.
#include <gtest/gtest.h>

#include "src/net/api_key_auth.hpp"
#include "src/net/base64url.hpp"

namespace pagedserve::net {
namespace {

TEST(base64url, rfc4648_vectors_without_padding_and_url_safe_alphabet) {
  EXPECT_EQ(base64url(""), "");
  EXPECT_EQ(base64url("f"), "Zg");
  EXPECT_EQ(base64url("fo"), "Zm8");
  EXPECT_EQ(base64url("foo"), "Zm9v");
  EXPECT_EQ(base64url("foob"), "Zm9vYg");
  EXPECT_EQ(base64url("fooba"), "Zm9vYmE");
  EXPECT_EQ(base64url("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64url("\xfb\xff"), "-_8");
}

TEST(api_key_auth, no_key_configured_accepts_everything) {
  EXPECT_TRUE(api_key_accepted("", {}));
  EXPECT_TRUE(api_key_accepted("", {"Bearer wrong", "", false}));
}

TEST(api_key_auth, bearer_header_must_carry_the_exact_key) {
  EXPECT_TRUE(api_key_accepted("s3cret", {"Bearer s3cret", "", false}));
  EXPECT_TRUE(api_key_accepted("s3cret", {"bearer s3cret", "", false}));  // the scheme is case-insensitive
  EXPECT_FALSE(api_key_accepted("s3cret", {"Bearer s3cre", "", false}));
  EXPECT_FALSE(api_key_accepted("s3cret", {"Bearer s3cret2", "", false}));
  EXPECT_FALSE(api_key_accepted("s3cret", {"Bearer ", "", false}));
  EXPECT_FALSE(api_key_accepted("s3cret", {"Basic s3cret", "", false}));
  EXPECT_FALSE(api_key_accepted("s3cret", {}));
}

TEST(api_key_auth, websocket_upgrades_may_offer_the_key_as_a_subprotocol) {
  const std::string offered = "pagedserve, bearer." + base64url("s3cret");
  EXPECT_TRUE(api_key_accepted("s3cret", {"", offered, true}));
  EXPECT_FALSE(api_key_accepted("s3cret", {"", offered, false}));  // only upgrades read the subprotocols
  EXPECT_FALSE(api_key_accepted("s3cret", {"", "pagedserve, bearer.s3cret", true}));
  EXPECT_TRUE(api_key_accepted("s3cret", {"Bearer s3cret", "pagedserve", true}));
}

}  // namespace
}  // namespace pagedserve::net
