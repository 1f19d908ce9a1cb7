// Which files of a hub repo are fetched (src/hub/hub_file_select.hpp).
#include <gtest/gtest.h>

#include "src/hub/hub_file_select.hpp"

namespace pagedserve {
namespace {

std::vector<hub_file> listing(std::initializer_list<const char*> names) {
  std::vector<hub_file> out;
  for (const char* n : names) out.push_back(hub_file{n, {}, {}, {}});
  return out;
}

std::vector<std::string> names(const hub_selection& s) {
  std::vector<std::string> out;
  for (const auto& f : s.files) out.push_back(f.name);
  return out;
}

TEST(hub_model_ref, parses_repo_ids_and_tags) {
  auto r = hub_model_ref_parse("Qwen/Qwen3-0.6B");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->repo, "Qwen/Qwen3-0.6B");
  EXPECT_EQ(r->tag, "");
  r = hub_model_ref_parse("unsloth/Qwen3-0.6B-GGUF:Q4_K_M");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->repo, "unsloth/Qwen3-0.6B-GGUF");
  EXPECT_EQ(r->tag, "Q4_K_M");
  for (const char* bad : {"model.bin", "/abs/path", "./rel/x", "a/b/c", "org/", "/name", "a--b/c", "a/b..c", "a/b:",
                          "a b/c", "../x", "org/name.", ""})
    EXPECT_FALSE(hub_model_ref_parse(bad)) << bad;
}

TEST(hub_files_select, safetensors_repo_takes_weights_config_and_tokenizer_only) {
  const auto s = hub_files_select(
      listing({".gitattributes", "README.md", "config.json", "generation_config.json", "merges.txt",
               "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json",
               "pytorch_model.bin", "tf_model.h5", "onnx/model.onnx", "onnx/model.safetensors", "tokenizer.json",
               "tokenizer_config.json", "chat_template.jinja", "original/consolidated.pt", "vocab.json"}),
      {"o/m", ""});
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(names(*s), (std::vector<std::string>{"config.json", "generation_config.json",
                                                 "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                                 "model.safetensors.index.json", "tokenizer.json",
                                                 "tokenizer_config.json", "chat_template.jinja"}));
  EXPECT_EQ(s->gguf, "");
  EXPECT_FALSE(hub_files_select(listing({"model.safetensors", "tokenizer.json"}), {"o/m", ""}));  // no config.json
  const auto none = hub_files_select(listing({"pytorch_model.bin", "config.json"}), {"o/m", ""});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().find("pytorch_model.bin"), std::string::npos) << none.error();
}

TEST(hub_files_select, gguf_tag_picks_one_file_case_insensitively) {
  const auto files = listing({"README.md", "m-Q4_K_M.gguf", "m-Q8_0.gguf", "m-q4_k_s.gguf", "mmproj-m-Q8_0.gguf"});
  auto s = hub_files_select(files, {"o/m", "q8_0"});
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s->gguf, "m-Q8_0.gguf");  // the vision projector is not a candidate
  EXPECT_EQ(names(*s), std::vector<std::string>{"m-Q8_0.gguf"});
  s = hub_files_select(files, {"o/m", ""});  // no tag: Q4_K_M
  ASSERT_TRUE(s);
  EXPECT_EQ(s->gguf, "m-Q4_K_M.gguf");
  const auto missing = hub_files_select(files, {"o/m", "Q2_K"});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("m-Q8_0.gguf"), std::string::npos) << missing.error();  // lists what there is
  const auto ambiguous = hub_files_select(files, {"o/m", "Q4_K"});
  ASSERT_FALSE(ambiguous);
  EXPECT_NE(ambiguous.error().find("several"), std::string::npos) << ambiguous.error();
}

TEST(hub_files_select, gguf_without_tag) {
  auto s = hub_files_select(listing({"only-F16.gguf"}), {"o/m", ""});  // the only one
  ASSERT_TRUE(s);
  EXPECT_EQ(s->gguf, "only-F16.gguf");
  const auto two = hub_files_select(listing({"a-F16.gguf", "a-Q8_0.gguf"}), {"o/m", ""});
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().find("a-F16.gguf, a-Q8_0.gguf"), std::string::npos) << two.error();
  // A tag on a safetensors-only repo is an error, not silently ignored.
  EXPECT_FALSE(hub_files_select(listing({"config.json", "model.safetensors"}), {"o/m", "Q4_K_M"}));
}

// A large model's quantization in splits (llama.cpp's gguf-split names, often in a folder of its own):
// every split is fetched and the first is the model path, as llama-server's -hf does.
TEST(hub_files_select, gguf_splits_are_fetched_together) {
  const auto files = listing({"README.md", "Q4_K_M/Big-Q4_K_M-00002-of-00003.gguf", "Q4_K_M/Big-Q4_K_M-00001-of-00003.gguf",
                              "Q4_K_M/Big-Q4_K_M-00003-of-00003.gguf", "Big-Q8_0.gguf"});
  auto s = hub_files_select(files, {"o/big", "Q4_K_M"});
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s->gguf, "Q4_K_M/Big-Q4_K_M-00001-of-00003.gguf");
  EXPECT_EQ(names(*s), (std::vector<std::string>{"Q4_K_M/Big-Q4_K_M-00001-of-00003.gguf",
                                                 "Q4_K_M/Big-Q4_K_M-00002-of-00003.gguf",
                                                 "Q4_K_M/Big-Q4_K_M-00003-of-00003.gguf"}));
  s = hub_files_select(files, {"o/big", ""});  // no tag: Q4_K_M, split too
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s->files.size(), 3u);
  // A split missing from the listing is named; two split models under one tag stay ambiguous.
  const auto gap = hub_files_select(listing({"B-Q4_K_M-00001-of-00003.gguf", "B-Q4_K_M-00003-of-00003.gguf"}), {"o/b", "Q4_K_M"});
  ASSERT_FALSE(gap);
  EXPECT_NE(gap.error().find("split 2 of 3 (B-Q4_K_M-00002-of-00003.gguf) is not in the repo"), std::string::npos) << gap.error();
  const auto two = hub_files_select(listing({"A-Q4_K_M-00001-of-00002.gguf", "A-Q4_K_M-00002-of-00002.gguf",
                                             "C-Q4_K_M-00001-of-00002.gguf", "C-Q4_K_M-00002-of-00002.gguf"}),
                                    {"o/b", "Q4_K_M"});
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().find("several"), std::string::npos) << two.error();
}

}  // namespace
}  // namespace pagedserve
