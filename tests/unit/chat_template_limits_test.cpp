// Hostile templates and hostile messages: range() is bounded and exact at the int64 edges (an
// overflowing step used to loop forever), and the work of one render is bounded even where a
// trusted template does per-byte work on an untrusted message's content.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat/chat_template.hpp"

namespace pagedserve {
namespace {

std::expected<std::string, std::string> render(std::string_view source, chat_template_context ctx = {},
                                               const chat_template_limits& limits = {}) {
  auto tpl = chat_template::parse(source);
  if (!tpl) return std::unexpected("parse: " + tpl.error());
  return tpl->render(ctx, limits);
}

std::string render_error(std::string_view source, chat_template_context ctx = {}, const chat_template_limits& limits = {}) {
  auto r = render(source, std::move(ctx), limits);
  EXPECT_FALSE(r.has_value()) << source << " rendered " << r.value_or("").substr(0, 80);
  return r ? std::string() : r.error();
}

const std::string max64 = "9223372036854775807";
const std::string min64 = "(-9223372036854775807 - 1)";

TEST(chat_template_range, counts_exactly_at_the_int64_edges) {
  const std::pair<std::string, std::string> cases[] = {
      {"range(0)", "[]"},
      {"range(5, 0)", "[]"},
      {"range(0, 5, -1)", "[]"},
      {"range(5, 0, -2)", "[5, 3, 1]"},
      // start + step passes INT64_MAX: one value, where x += step used to wrap and never stop.
      {"range(" + max64 + " - 2, " + max64 + ", 5)", "[9223372036854775805]"},
      {"range(" + max64 + " - 2, " + max64 + ", " + max64 + ")", "[9223372036854775805]"},
      {"range(" + min64 + ", " + min64 + " + 3)", "[-9223372036854775808, -9223372036854775807, -9223372036854775806]"},
      {"range(" + min64 + " + 2, " + min64 + ", -1)", "[-9223372036854775806, -9223372036854775807]"},
      {"range(" + min64 + " + 1, " + min64 + ", -5)", "[-9223372036854775807]"},
      // The whole int64 span in steps of 2^63 - 1 and -2^63 (Python gives the same lists).
      {"range(" + min64 + ", " + max64 + ", " + max64 + ")", "[-9223372036854775808, -1, 9223372036854775806]"},
      {"range(" + max64 + ", " + min64 + ", " + min64 + ")", "[9223372036854775807, -1]"},
  };
  for (const auto& [call, expected] : cases) {
    auto r = render("{{ " + call + "|list }}");
    ASSERT_TRUE(r.has_value()) << call << ": " << r.error();
    EXPECT_EQ(*r, expected) << call;
  }
}

TEST(chat_template_range, refuses_zero_steps_and_huge_lists_naming_range) {
  EXPECT_NE(render_error("{{ range(0, 5, 0)|list }}").find("range() arg 3 must not be zero"), std::string::npos);
  const std::vector<std::string> huge = {"range(16000000)", "range(100001)", "range(" + min64 + ", " + max64 + ")",
                                         "range(" + max64 + ", " + min64 + ", -1)",
                                         "range(" + min64 + ", " + max64 + ", 2)"};
  for (const std::string& call : huge) {
    const std::string err = render_error("{% for i in " + call + " %}{% endfor %}");
    EXPECT_NE(err.find("range() of"), std::string::npos) << call << ": " << err;
    EXPECT_NE(err.find("limit of 100000"), std::string::npos) << call << ": " << err;
  }
  EXPECT_EQ(render("{{ range(100000)|length }}").value_or(""), "100000");
  chat_template_limits small;
  small.max_range_items = 10;
  EXPECT_EQ(render("{{ range(10)|length }}", {}, small).value_or(""), "10");
  EXPECT_NE(render_error("{{ range(11)|length }}", {}, small).find("limit of 10"), std::string::npos);
}

chat_template_context one_message(std::string content) {
  chat_template_context ctx;
  chat_value::object m;
  m.emplace_back("role", chat_value{std::string("user")});
  m.emplace_back("content", chat_value{std::move(content)});
  ctx.messages.push_back(chat_value{std::move(m)});
  return ctx;
}

// A trusted template whose work grows with the message: each iteration copies the content twice
// without writing it, so the output limit never fires. A 1 MiB message would have it copy 2 GiB.
TEST(chat_template_work, a_message_cannot_make_rendering_unbounded) {
  const std::string tpl =
      "{% for i in range(1000) %}{% set doubled = messages[0].content ~ messages[0].content %}{% endfor %}ok";
  EXPECT_EQ(render(tpl, one_message("short")).value_or("error"), "ok");
  const std::string err = render_error(tpl, one_message(std::string(1u << 20, 'x')));
  EXPECT_NE(err.find("built more than"), std::string::npos) << err;
  // Repetition of the content is bounded by the size limit however small the template's factor.
  EXPECT_NE(render_error("{{ messages[0].content * 64 }}", one_message(std::string(1u << 20, 'x'))).find("exceeds the limit"),
            std::string::npos);
}

TEST(chat_template_work, evaluation_steps_are_bounded) {
  chat_template_limits small;
  small.max_render_steps = 1000;
  const std::string nested = "{% for i in range(100) %}{% for j in range(100) %}{{ j }}{% endfor %}{% endfor %}";
  EXPECT_NE(render_error(nested, {}, small).find("took more than 1000 steps"), std::string::npos);
  EXPECT_TRUE(render(nested).has_value());  // within the default bounds: 10k iterations
}

}  // namespace
}  // namespace pagedserve
