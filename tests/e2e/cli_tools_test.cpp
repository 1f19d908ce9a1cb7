// The offline subcommands run as a user would: tokenize against the golden ids, chat-template against
// the golden rendering, and convert + serve: a converted stories260K answers like the original.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>

#include "e2e/server_process.hpp"
#include "e2e/ws_client.hpp"

namespace pagedserve::e2e {
namespace {

std::filesystem::path tokenizers_dir() {
  const auto shared = test::shared_dir();
  return shared.empty() ? shared : shared / "models" / "tokenizers";
}

std::string ids_json(simdjson::dom::element ids) {
  std::string out = "[";
  bool first = true;
  for (auto v : ids.get_array()) {
    out += (first ? "" : ",") + std::to_string(int64_t(v));
    first = false;
  }
  return out + "]\n";
}

TEST(cli_tools, tokenize_prints_the_golden_ids_for_every_hf_tokenizer) {
  PAGEDSERVE_REQUIRE_SHARED(tokenizers_dir());
  simdjson::dom::parser parser;
  simdjson::dom::element golden = parser.load((test::shared_dir() / "golden" / "tokenizers.json").string());
  for (const char* name : {"qwen3", "llama3", "llama2"}) {
    int n_checked = 0;
    for (auto c : golden["tokenizers"][name]["cases"].get_array()) {
      if (++n_checked > 6) break;  // the unit tests cover every case; here the CLI path
      const std::string text{std::string_view(c["text"])};
      const auto r = run_process({test::server_binary().string(), "tokenize", "--tokenizer",
                                  (tokenizers_dir() / name).string(), "--text", text},
                                 std::chrono::seconds(30));
      ASSERT_TRUE(r.exited && r.exit_code == 0) << name << ": " << r.err;
      EXPECT_EQ(r.out, ids_json(c["ids"])) << name << " '" << text << "'";
    }
  }
}

TEST(cli_tools, chat_template_prints_the_golden_rendering) {
  PAGEDSERVE_REQUIRE_SHARED(tokenizers_dir());
  simdjson::dom::parser parser;
  simdjson::dom::element golden = parser.load((test::shared_dir() / "golden" / "tokenizers.json").string());
  simdjson::dom::element chat;
  ASSERT_EQ(golden["tokenizers"]["llama3"]["chat"].get(chat), simdjson::SUCCESS);
  for (auto conv : chat.get_array()) {
    const auto messages_file = std::filesystem::temp_directory_path() / ("pagedserve_chat_" + std::to_string(::getpid()) + ".json");
    std::ofstream(messages_file) << simdjson::to_string(conv["messages"]);
    const auto r = run_process({test::server_binary().string(), "chat-template", "--model",
                                (tokenizers_dir() / "llama3").string(), "--messages", messages_file.string()},
                               std::chrono::seconds(30));
    std::filesystem::remove(messages_file);
    ASSERT_TRUE(r.exited && r.exit_code == 0) << r.err;
    EXPECT_EQ(r.out, std::string_view(conv["rendered"]));
  }
}

TEST(cli_tools, a_converted_checkpoint_serves_the_same_greedy_text) {
  PAGEDSERVE_REQUIRE_SHARED(model_path());
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
