// The one JSON writer (pagedserve/json_writer.hpp): exact bytes of strings and numbers, as every
// encoder and the load generator write them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "api/json_writer.hpp"

namespace pagedserve {
namespace {

std::string quoted(std::string_view s) {
  std::string out;
  json_append_string(out, s);
  return out;
}

std::string number(float v) {
  std::string out;
  json_append_number(out, v);
  return out;
}

TEST(json_writer, escapes_quotes_backslashes_and_control_characters_only) {
  EXPECT_EQ(quoted(""), R"("")");
  EXPECT_EQ(quoted("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(quoted("\n\r\t"), R"("\n\r\t")");
  EXPECT_EQ(quoted(std::string_view("\x00\x01\x1f\x7f", 4)), "\"\\u0000\\u0001\\u001f\x7f\"");
  EXPECT_EQ(quoted("/<>&'"), R"("/<>&'")");
}

TEST(json_writer, copies_utf8_bytes_as_they_are) {
  EXPECT_EQ(quoted("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
}

TEST(json_writer, appends_after_what_is_there) {
  std::string out = "[";
  json_append_string(out, "x");
  out += ',';
  json_append_number(out, 1.5f);
  EXPECT_EQ(out, R"(["x",1.5)");
}

TEST(json_writer, numbers_are_shortest_round_trip_and_never_nan_or_infinite) {
  EXPECT_EQ(number(0.0f), "0");
  EXPECT_EQ(number(-0.25f), "-0.25");
  EXPECT_EQ(number(0.1f), "0.1");
  EXPECT_EQ(number(-std::numeric_limits<float>::infinity()), "-9999.0");
  EXPECT_EQ(number(std::numeric_limits<float>::infinity()), "0");
  EXPECT_EQ(number(std::nanf("")), "0");
}

}  // namespace
}  // namespace pagedserve
