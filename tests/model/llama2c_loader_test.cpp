// Checkpoint loading: real files load, synthetic files round-trip, broken files are clear errors.
#include <gtest/gtest.h>

#include <fstream>

#include "pagedserve/model.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("pagedserve_loader_" + std::to_string(::getpid()) + "_" + name);
}

model_config small_config(bool shared) {
  model_config c;
  c.dim = 32;
  c.hidden_dim = 48;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = 40;
  c.seq_len = 64;
  c.shared_classifier = shared;
  return c;
}

TEST(llama2c_loader, stories260k_header_and_shared_classifier) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  auto m = llama2c_model_load(test::model_file("stories260K.bin"));
  ASSERT_TRUE(m.has_value()) << m.error();
  const model_config& c = (*m)->config;
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.seq_len, 512);
  EXPECT_TRUE(c.shared_classifier);
  EXPECT_EQ((*m)->classifier, (*m)->token_embedding);
}

TEST(llama2c_loader, written_random_checkpoints_load_tied_and_untied) {
  for (bool shared : {true, false}) {
    const auto path = temp_file(shared ? "tied.bin" : "untied.bin");
    ASSERT_TRUE(llama2c_write_random(path, small_config(shared), 3).has_value());
    auto m = llama2c_model_load(path);
    ASSERT_TRUE(m.has_value()) << m.error();
    EXPECT_EQ((*m)->config.shared_classifier, shared);
    EXPECT_EQ((*m)->classifier == (*m)->token_embedding, shared);
    EXPECT_EQ((*m)->layers.size(), 2u);
    EXPECT_FLOAT_EQ((*m)->rms_final[0], 1.0f);
    std::filesystem::remove(path);
  }
}

TEST(llama2c_loader, truncated_or_corrupt_files_are_clear_errors) {
  const auto good = temp_file("good.bin");
  ASSERT_TRUE(llama2c_write_random(good, small_config(false), 4).has_value());
  const auto size = std::filesystem::file_size(good);
  const auto bad = temp_file("bad.bin");
  for (std::uintmax_t keep : {std::uintmax_t{0}, std::uintmax_t{10}, std::uintmax_t{28}, size / 2, size - 4}) {
    std::filesystem::copy_file(good, bad, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::resize_file(bad, keep);
    auto m = llama2c_model_load(bad);
    ASSERT_FALSE(m.has_value()) << "kept " << keep << " bytes";
    EXPECT_NE(m.error().find(bad.string()), std::string::npos) << m.error();
  }
  {  // a header that does not divide
    std::filesystem::copy_file(good, bad, std::filesystem::copy_options::overwrite_existing);
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    const std::int32_t n_heads = 5;
    f.seekp(3 * 4);
    f.write(reinterpret_cast<const char*>(&n_heads), 4);
  }
  auto m = llama2c_model_load(bad);
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().find("n_heads"), std::string::npos) << m.error();
  EXPECT_FALSE(llama2c_model_load(temp_file("missing.bin")).has_value());
  std::filesystem::remove(good);
  std::filesystem::remove(bad);
}

}  // namespace
}  // namespace pagedserve
