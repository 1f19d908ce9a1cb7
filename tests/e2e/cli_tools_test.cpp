// The offline subcommands run as a user would: tokenize against the golden ids, chat-template against
// the golden rendering, and convert + serve: a converted stories260K answers like the original.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>

#include "support/server_process.hpp"
#include "support/ws_client.hpp"

namespace pagedserve::e2e {
namespace {

std::string ids_json(simdjson::dom::element ids) {
  std::string out = "[";
  bool first = true;
  for (auto v : ids.get_array()) {
    out += (first ? "" : ",") + std::to_string(int64_t(v));
    first = false;
  }
  return out + "]\n";
}

// One Hugging Face tokenizer directory and its golden entry (skips where either is absent).
class cli_tools_golden : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    name_ = GetParam();
    dir_ = test::tokenizer_dir(name_);
    const auto golden_path = test::tokenizer_golden(name_);
    PAGEDSERVE_REQUIRE_DATA(dir_);
    PAGEDSERVE_REQUIRE_DATA(golden_path);
    ASSERT_EQ(parser_.load(golden_path.string())["tokenizers"][name_].get(spec_), simdjson::SUCCESS) << name_;
  }
  std::string name_;
  std::filesystem::path dir_;
  simdjson::dom::parser parser_;
  simdjson::dom::element spec_;  // golden["tokenizers"][name_]
};

using cli_tools_tokenize = cli_tools_golden;

TEST_P(cli_tools_tokenize, prints_the_golden_ids) {
  int n_checked = 0;
  for (auto c : spec_["cases"].get_array()) {
    if (++n_checked > 6) break;  // the unit tests cover every case; here the CLI path
    const std::string text{std::string_view(c["text"])};
    const auto r = run_process({test::server_binary().string(), "tokenize", "--tokenizer", dir_.string(), "--text", text},
                               std::chrono::seconds(30));
    ASSERT_TRUE(r.exited && r.exit_code == 0) << name_ << ": " << r.err;
    EXPECT_EQ(r.out, ids_json(c["ids"])) << name_ << " '" << text << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(hf, cli_tools_tokenize, testing::Values("qwen3", "llama3", "llama2"));

// The golden conversations rendered without template arguments (the CLI passes none); llama2 has no template.
using cli_tools_chat_template = cli_tools_golden;

TEST_P(cli_tools_chat_template, prints_the_golden_rendering) {
  simdjson::dom::element chat;
  ASSERT_EQ(spec_["chat"].get(chat), simdjson::SUCCESS);
  int n_checked = 0;
  for (auto conv : chat.get_array()) {
    if (conv["template_kwargs"].get_object().value().size() != 0) continue;
    const auto messages_file = std::filesystem::temp_directory_path() / ("pagedserve_chat_" + std::to_string(::getpid()) + ".json");
    std::ofstream(messages_file) << simdjson::to_string(conv["messages"]);
    const auto r = run_process({test::server_binary().string(), "chat-template", "--model", dir_.string(), "--messages",
                                messages_file.string()},
                               std::chrono::seconds(30));
    std::filesystem::remove(messages_file);
    ASSERT_TRUE(r.exited && r.exit_code == 0) << r.err;
    EXPECT_EQ(r.out, std::string_view(conv["rendered"]));
    ++n_checked;
  }
  EXPECT_GT(n_checked, 0);
}

INSTANTIATE_TEST_SUITE_P(hf, cli_tools_chat_template, testing::Values("qwen3", "llama3"));

TEST(cli_tools, a_converted_checkpoint_serves_the_same_greedy_text) {
  PAGEDSERVE_REQUIRE_DATA(model_path());
  const auto dir = std::filesystem::temp_directory_path() / ("pagedserve_hf_" + std::to_string(::getpid()));
  const auto conv = run_process({test::server_binary().string(), "convert", "--model", model_path().string(),
                                 "--out", dir.string()},
                                std::chrono::seconds(60));
  ASSERT_TRUE(conv.exited && conv.exit_code == 0) << conv.err;
  const auto original = cli_generate("Once upon a time", 40);
  const auto converted = run_process({test::server_binary().string(), "generate", "--model", dir.string(),
                                      "--tokenizer", tokenizer_path().string(), "--prompt", "Once upon a time",
                                      "--max-tokens", "40", "--temperature", "0"},
                                     std::chrono::seconds(60));
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(converted.exited && converted.exit_code == 0) << converted.err;
  EXPECT_FALSE(original.out.empty());
  EXPECT_EQ(converted.out, original.out);
}

}  // namespace
}  // namespace pagedserve::e2e
