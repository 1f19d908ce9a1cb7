// `pagedserve generate` prints exactly run.c's completion text for every golden case.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>

#include "model/golden_support.hpp"

namespace pagedserve {
namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string run_capture(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  ::pclose(p);
  return out;
}

TEST(cli_generate, prints_the_golden_completion_for_every_case) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  for (const auto& c : test::golden_stories260k()) {
    SCOPED_TRACE("prompt '" + c.prompt + "' steps " + std::to_string(c.steps));
    const std::string cmd = test::server_binary().string() + " generate --model " +
                            shell_quote(test::model_file("stories260K.bin").string()) + " --tokenizer " +
                            shell_quote(test::model_file("tok512.bin").string()) + " --prompt " +
                            shell_quote(c.prompt) + " --max-tokens " + std::to_string(c.n_generated) +
                            " --temperature 0 2>/dev/null";
    EXPECT_EQ(run_capture(cmd), c.generated_text);
  }
}

}  // namespace
}  // namespace pagedserve
