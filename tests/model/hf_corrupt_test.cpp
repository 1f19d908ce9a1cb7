// Broken Hugging Face folders and safetensors files: each is a clear error naming the problem, and
// nothing reads outside the file (run under PAGEDSERVE_SANITIZE=address to check the latter).
#include <gtest/gtest.h>

#include <fstream>

#include "model/hf_test_model.hpp"
#include "model/hf_model.hpp"
#include "model/model_load.hpp"
#include "model/safetensors.hpp"

namespace pagedserve {
namespace {

class hf_corrupt : public testing::Test {
 protected:
  void SetUp() override {
    spec_ = test::make_spec("corrupt", "Qwen3ForCausalLM", 32, 40, 2, 4, 2, 16);
    spec_.qk_norm = true;
    spec_.tied = true;
    tensors_ = test::spec_random_tensors(spec_, dtype::bf16, 3);
    dir_ = test::temp_dir("corrupt");
    write();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write(int shards = 1) { test::write_spec_folder(dir_, spec_, tensors_, dtype::bf16, shards); }
  void write_config(const std::string& json) { std::ofstream(dir_ / "config.json") << json; }
  // Replaces the first occurrence of `from` in config.json.
  void edit_config(const std::string& from, const std::string& to) {
    std::string json = test::spec_config_json(spec_);
    const auto at = json.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    write_config(json.replace(at, from.size(), to));
  }
  // A safetensors file from raw header text and data bytes.
  void write_raw(const std::string& header, std::size_t n_data, std::uint64_t header_len_field = 0) {
    std::ofstream out(dir_ / "model.safetensors", std::ios::binary | std::ios::trunc);
    const std::uint64_t len = header_len_field ? header_len_field : header.size();
    out.write(reinterpret_cast<const char*>(&len), 8);
    out << header << std::string(n_data, '\0');
  }
  // The load fails, and its message holds every one of `needles`.
  void expect_error(std::initializer_list<std::string> needles) {
    auto m = hf_model_load(dir_);
    ASSERT_FALSE(m.has_value()) << "loaded a broken folder";
    for (const auto& n : needles) EXPECT_NE(m.error().find(n), std::string::npos) << "'" << n << "' not in: " << m.error();
  }

  test::arch_spec spec_;
  test::tensor_map tensors_;
  std::filesystem::path dir_;
};

TEST_F(hf_corrupt, the_intact_folder_loads) {
  auto m = hf_model_load(dir_);
  ASSERT_TRUE(m.has_value()) << m.error();
}

TEST_F(hf_corrupt, truncated_safetensors_at_every_boundary) {
  const auto file = dir_ / "model.safetensors";
  const auto size = std::filesystem::file_size(file);
  std::uint64_t header_len = 0;
  std::ifstream(file, std::ios::binary).read(reinterpret_cast<char*>(&header_len), 8);
  for (std::uintmax_t keep : {std::uintmax_t{0}, std::uintmax_t{5}, std::uintmax_t{8}, 8 + header_len / 2, 8 + header_len,
                              8 + header_len + 1, size / 2, size - 1}) {
    SCOPED_TRACE("kept " + std::to_string(keep) + " of " + std::to_string(size) + " bytes");
    write();
    std::filesystem::resize_file(file, keep);
    expect_error({"model.safetensors"});
  }
}

TEST_F(hf_corrupt, headers_that_lie_about_sizes_and_offsets) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";
  ASSERT_TRUE(safetensors_file::open((write_raw(ok, 24), dir_ / "model.safetensors")).has_value());
  const std::pair<std::string, std::string> cases[] = {
      {R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,240]}})", "outside"},
      {R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[8,32]}})", "outside"},
      {R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[20,4]}})", "outside"},
      {R"({"a":{"dtype":"F32","shape":[2,4],"data_offsets":[0,24]}})", "need 32"},
      {R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,24]}})", "too large"},
      {R"({"a":{"dtype":"F32","shape":[-2,3],"data_offsets":[0,24]}})", "shape"},
      {R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0]}})", "data_offsets"},
      {R"({"a":{"dtype":"F32","shape":[2,3]}})", "data_offsets"},
      {R"({"a":{"shape":[2,3],"data_offsets":[0,24]}})", "dtype"},
      {R"({"a":{"dtype":"F17","shape":[2,3],"data_offsets":[0,24]}})", "unknown dtype 'F17'"},
      {R"({"a":[1,2]})", "not an object"},
      {R"([1,2,3])", "not a JSON object"},
      {R"({"a":{"dtype":"F32", "shape":[2,3)", "JSON"},
      {R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})", "twice"},
  };
  for (const auto& [header, needle] : cases) {
    SCOPED_TRACE(header);
    write_raw(header, 24);
    auto f = safetensors_file::open(dir_ / "model.safetensors");
    ASSERT_FALSE(f.has_value());
    EXPECT_NE(f.error().find(needle), std::string::npos) << f.error();
  }
  write_raw(ok, 24, /*header_len_field=*/1ull << 40);
  auto f = safetensors_file::open(dir_ / "model.safetensors");
  ASSERT_FALSE(f.has_value());
  EXPECT_NE(f.error().find("header length"), std::string::npos) << f.error();
  write_raw(ok, 24, /*header_len_field=*/ok.size() + 25);
  EXPECT_FALSE(safetensors_file::open(dir_ / "model.safetensors").has_value());
}

TEST_F(hf_corrupt, a_needed_tensor_in_a_dtype_the_kernels_do_not_read) {
  const std::string header = R"({"model.embed_tokens.weight":{"dtype":"I64","shape":[97,32],"data_offsets":[0,24832]}})";
  write_raw(header, 24832);
  expect_error({"model.embed_tokens.weight", "I64"});
}

TEST_F(hf_corrupt, config_problems_name_the_field) {
  edit_config("\"hidden_size\": 32, ", "");
  expect_error({"config.json", "missing field 'hidden_size'"});
  edit_config("\"num_attention_heads\": 4", "\"num_attention_heads\": \"four\"");
  expect_error({"num_attention_heads", "not an integer"});
  edit_config("Qwen3ForCausalLM", "GemmaForCausalLM");
  expect_error({"architecture 'GemmaForCausalLM' is not supported"});
  edit_config("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"");
  expect_error({"'hidden_act' = \"gelu\" is not supported"});
  edit_config("\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"longrope\", \"factor\": 4.0}");
  expect_error({"rope_scaling", "longrope"});
  edit_config("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3");
  expect_error({"num_key_value_heads"});
  write_config("{\"architectures\": [\"Qwen3ForCausalLM\"], ");
  expect_error({"config.json", "JSON"});
  std::filesystem::remove(dir_ / "config.json");
  expect_error({"config.json", "cannot open"});
}

TEST_F(hf_corrupt, missing_or_misshapen_tensors_are_named) {
  tensors_.erase("model.layers.1.self_attn.k_norm.weight");
  write();
  expect_error({"missing tensor 'model.layers.1.self_attn.k_norm.weight'", "Qwen3ForCausalLM"});
  tensors_ = test::spec_random_tensors(spec_, dtype::bf16, 3);
  tensors_["model.layers.0.mlp.up_proj.weight"].shape = {16, 80};  // same element count, wrong shape
  write();
  expect_error({"model.layers.0.mlp.up_proj.weight", "[16, 80]", "expected [40, 32]"});
  tensors_ = test::spec_random_tensors(spec_, dtype::bf16, 3);
  spec_.tied = false;  // config now wants lm_head.weight, which the folder lacks
  write();
  expect_error({"missing tensor 'lm_head.weight'"});
}

TEST_F(hf_corrupt, shard_index_problems) {
  write(2);
  ASSERT_TRUE(hf_model_load(dir_).has_value());
  std::filesystem::remove(dir_ / "model-00002-of-00002.safetensors");
  expect_error({"model-00002-of-00002.safetensors"});
  write(2);
  std::ofstream(dir_ / "model.safetensors.index.json") << R"({"weight_map": {"model.norm.weight": "../evil.safetensors"}})";
  expect_error({"not a file name in the folder"});
  // Point model.norm.weight at the shard that does not hold it.
  auto first = safetensors_file::open(dir_ / "model-00001-of-00002.safetensors");
  ASSERT_TRUE(first.has_value());
  const std::string wrong = first->find("model.norm.weight") ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
  std::ofstream(dir_ / "model.safetensors.index.json") << R"({"weight_map": {"model.norm.weight": ")" + wrong + "\"}}";
  expect_error({"does not hold it", "model.norm.weight"});
  std::ofstream(dir_ / "model.safetensors.index.json") << R"({"metadata": {}})";
  expect_error({"weight_map"});
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ / "config.json") << test::spec_config_json(spec_);
  expect_error({"no *.safetensors"});
}

TEST_F(hf_corrupt, model_load_any_routes_by_content) {
  EXPECT_TRUE(model_load_any(dir_).has_value());
  EXPECT_TRUE(model_load_any(dir_ / "model.safetensors").has_value());
  const auto gguf = dir_ / "model.gguf";
  std::ofstream(gguf) << "GGUF\x03\0\0\0";
  auto g = model_load_any(gguf);
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(g.error().find("GGUF"), std::string::npos) << g.error();
  auto missing = model_load_any(dir_ / "nope.bin");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().find("nope.bin"), std::string::npos);
  std::ofstream(dir_ / "junk.bin") << "not a checkpoint";
  EXPECT_FALSE(model_load_any(dir_ / "junk.bin").has_value());  // falls to llama2.c, which refuses it
}

}  // namespace
}  // namespace pagedserve
