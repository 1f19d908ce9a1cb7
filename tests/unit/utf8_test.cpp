// The UTF-8 module (pagedserve/utf8.hpp): every scalar value round-trips through utf8_append and
// utf8_decode, exactly the encodings of scalar values decode as complete, invalid text is replaced
// one U+FFFD per maximal subpart (the Unicode Standard's own example), and a valid start cut short
// by the end of the text is told apart from bytes that can never become a character.
#include "pagedserve/utf8.hpp"

#include <gtest/gtest.h>

#include <unordered_set>

namespace pagedserve {
namespace {

constexpr std::string_view fffd = "\xEF\xBF\xBD";

TEST(utf8, every_scalar_value_round_trips) {
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;  // surrogates are not scalar values
    std::string s;
    utf8_append(s, cp);
    const utf8_char ch = utf8_decode(s, 0);
    ASSERT_EQ(ch.status, utf8_status::complete) << std::hex << static_cast<std::uint32_t>(cp);
    ASSERT_EQ(ch.cp, cp);
    ASSERT_EQ(ch.length, s.size());
    ASSERT_EQ(s.size(), cp < 0x80 ? 1u : cp < 0x800 ? 2u : cp < 0x10000 ? 3u : 4u);
  }
}

// Every 1- and 2-byte string and every 3-byte one with a 3-byte lead (E0..EF): complete exactly when
// its first character is some scalar value's encoding, which rules out overlongs, surrogates and
// stray bytes without listing them.
TEST(utf8, only_encodings_of_scalar_values_decode) {
  std::unordered_set<std::string> encodings;
  for (char32_t cp = 0; cp < 0x10000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    utf8_append(s, cp);
    encodings.insert(s);
  }
  int n_complete = 0;
  const auto check = [&](std::uint32_t v, int len) {
    std::string s;
    for (int k = len - 1; k >= 0; --k) s += static_cast<char>((v >> (8 * k)) & 0xFF);
    const utf8_char ch = utf8_decode(s, 0);
    const bool complete = ch.status == utf8_status::complete;
    bool starts_with_encoding = false;  // UTF-8 is prefix-free: at most one prefix is an encoding
    for (std::size_t n = 1; n <= s.size(); ++n) starts_with_encoding |= encodings.contains(s.substr(0, n));
    ASSERT_EQ(complete, starts_with_encoding) << std::hex << v;
    if (complete) ASSERT_TRUE(encodings.contains(s.substr(0, ch.length))) << std::hex << v;
    if (!complete) {
      std::size_t n = 1;  // a maximal subpart: a proper prefix of some encoding
      while (n < 4 && n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) ++n;
      ASSERT_LE(ch.length, n) << std::hex << v;
    }
    if (complete && ch.length == s.size()) ++n_complete;
    ASSERT_GE(ch.length, 1u);
    ASSERT_LE(ch.length, s.size());
  };
  for (std::uint32_t v = 0; v < 0x100; ++v) check(v, 1);
  for (std::uint32_t v = 0; v < 0x10000; ++v) check(v, 2);
  for (std::uint32_t v = 0xE00000; v < 0xF00000; ++v) check(v, 3);
  EXPECT_EQ(n_complete, 0x80 + (0x800 - 0x80) + (0x10000 - 0x800 - 0x800));  // 1-, 2- and 3-byte scalars
}

// Unicode Standard, chapter 3, "U+FFFD Substitution of Maximal Subparts" (Table 3-8).
TEST(utf8, sanitize_replaces_each_maximal_subpart_once) {
  const std::string in = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  const std::string want = "a" + std::string(fffd) + std::string(fffd) + std::string(fffd) + "b" + std::string(fffd) +
                           "c" + std::string(fffd) + std::string(fffd) + "d";
  EXPECT_EQ(utf8_sanitize(in), want);
  EXPECT_FALSE(utf8_valid(in));
  EXPECT_TRUE(utf8_valid(want));
  EXPECT_EQ(utf8_sanitize("ok \xF0\x9F\x90\xB6"), "ok \xF0\x9F\x90\xB6");
  EXPECT_EQ(utf8_sanitize("\xC0\xAF"), std::string(fffd) + std::string(fffd));  // overlong: two stray bytes
  EXPECT_EQ(utf8_sanitize("\xED\xA0\x80"), std::string(fffd) + std::string(fffd) + std::string(fffd));  // surrogate
  EXPECT_EQ(utf8_sanitize("a\xF0\x9F"), "a" + std::string(fffd));  // cut short: one subpart, as Python's "replace"
  EXPECT_TRUE(utf8_valid(""));
}

TEST(utf8, a_cut_short_start_is_incomplete_and_a_bad_one_invalid) {
  for (std::string_view s : {"\xC3", "\xE2\x82", "\xF0\x9F\x90", "\xF4\x8F"}) {
    const utf8_char ch = utf8_decode(s, 0);
    EXPECT_EQ(ch.status, utf8_status::incomplete) << s.size();
    EXPECT_EQ(ch.length, s.size());
    EXPECT_EQ(ch.cp, U'\uFFFD');
  }
  // Stray continuation, C0/C1 and F5.. leads, a second byte out of range, or a start followed by
  // something other than its continuation: more text cannot help.
  for (std::string_view s : {"\x80", "\xC0", "\xC1\x80", "\xF5", "\xFF", "\xE0\x80", "\xED\xA0", "\xF4\x90", "\xE2x"}) {
    const utf8_char ch = utf8_decode(s, 0);
    EXPECT_EQ(ch.status, utf8_status::invalid) << s.size();
    EXPECT_EQ(ch.length, 1u);
  }
  const utf8_char mid = utf8_decode("\xE2\x82x", 0);  // two bytes of a valid start, then not a continuation
  EXPECT_EQ(mid.status, utf8_status::invalid);
  EXPECT_EQ(mid.length, 2u);
}

TEST(utf8, prefix_never_ends_inside_a_character) {
  const std::string s = "a\xC3\xA9\xF0\x9F\x90\xB6";  // a, é, 🐶
  EXPECT_EQ(utf8_prefix(s, 2), "a");
  EXPECT_EQ(utf8_prefix(s, 3), "a\xC3\xA9");
  EXPECT_EQ(utf8_prefix(s, 6), "a\xC3\xA9");
  EXPECT_EQ(utf8_prefix(s, 7), s);
}

}  // namespace
}  // namespace pagedserve
