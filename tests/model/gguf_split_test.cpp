// Split GGUF models (gguf_split.hpp): llama.cpp's file names, gguf_writer::write_splits, and the first
// split opening the whole model, with the same tensors (bytes) and the same logits (bits) as the model
// in one file; a split that is missing, out of place, misnamed or inconsistent is an error naming it.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "model/gguf.hpp"
#include "model/gguf_model.hpp"
#include "model/gguf_random_model.hpp"
#include "model/gguf_recipe.hpp"
#include "model/gguf_split.hpp"
#include "model/gguf_writer.hpp"
#include "model/prefill_logits.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve {
namespace {

TEST(gguf_split, names_as_llama_cpp_writes_them) {
  EXPECT_EQ(gguf_split_path("/m/Qwen3-30B-A3B-Q4_K_M", 0, 3).string(), "/m/Qwen3-30B-A3B-Q4_K_M-00001-of-00003.gguf");
  EXPECT_EQ(gguf_split_path("x", 11, 12).string(), "x-00012-of-00012.gguf");
  const auto n = gguf_split_name_parse("/m/Qwen3-30B-A3B-Q4_K_M-00002-of-00003.gguf");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->prefix, "/m/Qwen3-30B-A3B-Q4_K_M");
  EXPECT_EQ(n->split, 1);
  EXPECT_EQ(n->n_splits, 3);
  for (const char* not_split : {"model.gguf", "m-00001-of-00003.bin", "m-1-of-3.gguf", "m-00000-of-00003.gguf",
                                "m-00004-of-00003.gguf", "-of-00003.gguf", "m-0000a-of-00003.gguf", "m-00001-of-.gguf"})
    EXPECT_FALSE(gguf_split_name_parse(not_split)) << not_split;
}

class split_model : public testing::Test {
 protected:
  void SetUp() override {
    model_config c;
    c.architecture = "llama";
    c.dim = 256, c.hidden_dim = 512, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.vocab_size = 300;
    c.seq_len = 128, c.shared_classifier = false;
    gguf_add_random_model(writer_, c, *gguf_recipe_parse("Q4_K_M"), 11);
    gguf_add_synthetic_vocab(writer_, c.vocab_size);
    dir_ = std::filesystem::temp_directory_path() / ("pagedserve_split_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    single_ = dir_ / "m.gguf";
    ASSERT_TRUE(writer_.write(single_).has_value());
    auto first = writer_.write_splits((dir_ / "m-Q4_K_M").string(), 3);
    ASSERT_TRUE(first.has_value()) << first.error();
    first_ = *first;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path split(int s) const { return gguf_split_path((dir_ / "m-Q4_K_M").string(), s, 3); }

  gguf_writer writer_;
  std::filesystem::path dir_, single_, first_;
};

TEST_F(split_model, opens_as_the_single_file) {
  EXPECT_EQ(first_, split(0));
  auto whole = gguf_file::open(single_);
  auto joined = gguf_file::open(first_);
  ASSERT_TRUE(whole.has_value()) << whole.error();
  ASSERT_TRUE(joined.has_value()) << joined.error();
  EXPECT_EQ(joined->n_splits(), 3);
  EXPECT_EQ(whole->n_splits(), 1);
  ASSERT_EQ(joined->tensors().size(), whole->tensors().size());
  for (const gguf_tensor_info& t : whole->tensors()) {
    const gguf_tensor_info* u = joined->tensor(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->type, t.type);
    EXPECT_EQ(u->ne, t.ne);
    ASSERT_EQ(u->n_bytes, t.n_bytes);
    EXPECT_EQ(std::memcmp(u->data, t.data, *t.n_bytes), 0) << t.name;
  }
  EXPECT_EQ(joined->get_string("general.architecture").value_or(""), "llama");
  // One data section per file, each inside its own file's mapping (the loader prefaults and releases
  // pages section by section: never the gaps between the mappings).
  ASSERT_EQ(joined->data_sections().size(), 3u);
  for (int s = 0; s < 3; ++s) EXPECT_LT(joined->data_sections()[s].size(), std::filesystem::file_size(split(s)));
  // Every split holds some of the tensors, and the later ones no model metadata.
  for (int s = 0; s < 3; ++s) {
    const auto bytes = std::filesystem::file_size(split(s));
    std::ifstream in(split(s), std::ios::binary);
    std::vector<std::byte> data(bytes);
    in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(bytes));
    auto alone = gguf_file::parse(data, nullptr, split(s).string());
    ASSERT_TRUE(alone.has_value()) << alone.error();
    EXPECT_GT(alone->tensors().size(), 0u);
    EXPECT_EQ(alone->find("general.architecture") != nullptr, s == 0);
    EXPECT_EQ(alone->get_uint(gguf_split_no_key).value_or(99), static_cast<std::uint64_t>(s));
  }

  auto a = gguf_model_load(single_, {.weights = weight_format::as_stored});
  auto b = gguf_model_load(first_, {.weights = weight_format::as_stored});
  ASSERT_TRUE(a.has_value()) << a.error();
  ASSERT_TRUE(b.has_value()) << b.error();
  const std::vector<token_id> ids = {1, 17, 260, 5, 99, 31, 200, 7};
  const auto& kt = *kernels::kernel_table_select();
  EXPECT_EQ(test::prefill_logits(**a, kt, ids), test::prefill_logits(**b, kt, ids)) << "bit for bit";
}

TEST_F(split_model, a_later_split_names_the_first) {
  auto r = gguf_file::open(split(1));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("this is split 2 of 3"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("open its first file, m-Q4_K_M-00001-of-00003.gguf"), std::string::npos) << r.error();
}

TEST_F(split_model, a_missing_split_is_named) {
  std::filesystem::remove(split(2));
  auto r = gguf_file::open(first_);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("split 3 of 3 (" + split(2).string() + ") is missing"), std::string::npos) << r.error();
}

TEST_F(split_model, a_renamed_first_split_cannot_find_the_others) {
  const auto renamed = dir_ / "renamed.gguf";
  std::filesystem::rename(first_, renamed);
  auto r = gguf_file::open(renamed);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("not named as llama.cpp names them (<name>-00001-of-00003.gguf)"), std::string::npos) << r.error();
}

TEST_F(split_model, splits_of_another_model_are_refused) {
  // Split 2 of a 2-split model of the same name where split 2 of 3 was expected.
  ASSERT_TRUE(writer_.write_splits((dir_ / "m-Q4_K_M-two").string(), 2).has_value());
  std::filesystem::copy_file(gguf_split_path((dir_ / "m-Q4_K_M-two").string(), 1, 2), split(1),
                             std::filesystem::copy_options::overwrite_existing);
  auto r = gguf_file::open(first_);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("says it is split 2 of 2, where split 2 of 3 was expected"), std::string::npos) << r.error();
  // The same split twice: its tensors would be read twice.
  std::filesystem::copy_file(split(2), split(1), std::filesystem::copy_options::overwrite_existing);
  r = gguf_file::open(first_);
  ASSERT_FALSE(r.has_value());
}

}  // namespace
}  // namespace pagedserve
