// Hostile and broken GGUF files: each is a clear error naming the problem, never a crash or a read
// past the file (run under -DPAGEDSERVE_SANITIZE=address to check the latter).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>

#include "model/gguf_test_model.hpp"
#include "model/gguf_model.hpp"
#include "model/model_load.hpp"

namespace pagedserve {
namespace {

test::arch_spec small_spec() { return test::make_spec("tiny", "LlamaForCausalLM", 32, 32, 1, 2, 1, 0); }

gguf_writer small_writer(const std::string& skip_key = "") {
  const auto s = small_spec();
  gguf_writer w;
  test::gguf_add_spec_metadata(w, s, skip_key);
  test::gguf_add_spec_tensors(w, s, test::spec_random_tensors(s, dtype::f32, 3), gguf_tensor_type::q8_0);
  return w;
}

// Parses and loads bytes held in memory; the error, or "" when both succeed.
std::string load_error(std::vector<std::byte> bytes) {
  auto owned = std::make_shared<std::vector<std::byte>>(std::move(bytes));
  auto f = gguf_file::parse(*owned, owned, "mem.gguf");
  if (!f) return f.error();
  (void)gguf_tokenizer_from(*f);  // these files carry no tokenizer: that must fail cleanly too
  auto m = gguf_model_from(*f);
  return m ? "" : m.error();
}

std::vector<std::byte> encode_u64(std::uint32_t type, std::uint64_t count) {
  std::vector<std::byte> e(12);
  std::memcpy(e.data(), &type, 4);
  std::memcpy(e.data() + 4, &count, 8);
  return e;
}

TEST(gguf_corrupt, the_valid_file_loads) { EXPECT_EQ(load_error(small_writer().bytes()), ""); }

TEST(gguf_corrupt, every_truncation_is_an_error) {
  const auto full = small_writer().bytes();
  // The last 32 bytes may be padding; any shorter prefix lacks part of a tensor or the header.
  for (std::size_t n = 0; n + 32 < full.size(); n += (n < 4096 ? 1 : 61)) {
    const std::string e = load_error(std::vector<std::byte>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n)));
    ASSERT_NE(e, "") << "prefix of " << n << " bytes loaded";
  }
  EXPECT_NE(load_error(std::vector<std::byte>(full.begin(), full.end() - 40)).find("runs past the end of the file"),
            std::string::npos);
}

TEST(gguf_corrupt, a_file_on_disk_that_is_truncated_names_itself) {
  const auto path = test::temp_dir("trunc.gguf");
  auto bytes = small_writer().bytes();
  bytes.resize(bytes.size() / 2);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  auto m = model_load_any(path);
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().find(path.string()), std::string::npos) << m.error();
  std::filesystem::remove(path);
}

TEST(gguf_corrupt, tensor_data_past_the_end) {
  gguf_writer w = small_writer();
  w.add_tensor_raw("extra.weight", {32, 1000}, 0, std::vector<std::byte>(128));  // claims 128000 bytes
  const std::string e = load_error(w.bytes());
  EXPECT_NE(e.find("tensor 'extra.weight'"), std::string::npos) << e;
  EXPECT_NE(e.find("past the end"), std::string::npos) << e;
}

// attn_q keeps its dims and bytes, only its type number in the directory changes: the loader must
// name the tensor and the type rather than misread the bytes.
TEST(gguf_corrupt, unknown_and_unsupported_tensor_types_are_named) {
  for (const auto& [type, want] : {std::pair{99u, "unknown ggml type 99"}, std::pair{9u, "Q8_1, ggml type 9"}}) {
    const auto s = small_spec();
    gguf_writer w;
    test::gguf_add_spec_metadata(w, s);
    test::gguf_add_spec_tensors(w, s, test::spec_random_tensors(s, dtype::f32, 3), gguf_tensor_type::f32);
    auto bytes = w.bytes();
    const std::string name = "blk.0.attn_q.weight";
    const auto* n = reinterpret_cast<const std::byte*>(name.data());
    const auto it = std::search(bytes.begin(), bytes.end(), n, n + name.size());
    ASSERT_NE(it, bytes.end());
    const std::size_t type_pos = static_cast<std::size_t>(it - bytes.begin()) + name.size() + 4 + 2 * 8;  // n_dims, ne[2]
    std::memcpy(bytes.data() + type_pos, &type, 4);
    const std::string e = load_error(std::move(bytes));
    EXPECT_NE(e.find("tensor 'blk.0.attn_q.weight'"), std::string::npos) << e;
    EXPECT_NE(e.find(want), std::string::npos) << e;
  }
}

TEST(gguf_corrupt, huge_array_and_string_lengths) {
  {
    gguf_writer w = small_writer();
    w.add_raw_value("tokenizer.ggml.tokens", 9, encode_u64(8, std::uint64_t{1} << 62));
    const std::string e = load_error(w.bytes());
    EXPECT_NE(e.find("tokenizer.ggml.tokens"), std::string::npos) << e;
  }
  {
    gguf_writer w = small_writer();
    w.add_raw_value("tokenizer.ggml.scores", 9, encode_u64(6, ~std::uint64_t{0} / 2));
    EXPECT_NE(load_error(w.bytes()).find("runs past the end"), std::string::npos);
  }
  {
    gguf_writer w = small_writer();
    std::vector<std::byte> len(8);
    const std::uint64_t huge = ~std::uint64_t{0} - 3;
    std::memcpy(len.data(), &huge, 8);
    w.add_raw_value("general.description", 8, len);
    const std::string e = load_error(w.bytes());
    EXPECT_NE(e.find("general.description"), std::string::npos) << e;
  }
  {  // header counts larger than the file
    auto bytes = small_writer().bytes();
    const std::uint64_t huge = std::uint64_t{1} << 61;
    std::memcpy(bytes.data() + 16, &huge, 8);
    EXPECT_NE(load_error(bytes).find("more than the file can hold"), std::string::npos);
  }
}

TEST(gguf_corrupt, missing_metadata_and_tensors_are_named) {
  EXPECT_NE(load_error(small_writer("llama.block_count").bytes()).find("missing metadata 'llama.block_count'"),
            std::string::npos);
  EXPECT_NE(load_error(small_writer("llama.attention.layer_norm_rms_epsilon").bytes())
                .find("'llama.attention.layer_norm_rms_epsilon'"),
            std::string::npos);
  EXPECT_NE(load_error(small_writer("general.architecture").bytes()).find("general.architecture"), std::string::npos);

  const auto s = small_spec();
  gguf_writer w;
  test::gguf_add_spec_metadata(w, s);
  auto t = test::spec_random_tensors(s, dtype::f32, 3);
  t.erase("model.layers.0.mlp.up_proj.weight");
  t["model.layers.0.mlp.up_proj.weight"] = {{1, 32}, std::vector<float>(32)};  // wrong shape
  test::gguf_add_spec_tensors(w, s, t, gguf_tensor_type::f32);
  const std::string e = load_error(w.bytes());
  EXPECT_NE(e.find("tensor 'blk.0.ffn_up.weight' has dimensions [32, 1], expected [32, 32]"), std::string::npos) << e;
}

TEST(gguf_corrupt, bad_version_magic_and_alignment) {
  auto bytes = small_writer().bytes();
  bytes[4] = std::byte{1};
  EXPECT_NE(load_error(bytes).find("GGUF version 1 is not supported"), std::string::npos);
  bytes[0] = std::byte{'X'};
  EXPECT_NE(load_error(bytes).find("not a GGUF file"), std::string::npos);
  gguf_writer w = small_writer();
  w.add_u32("general.alignment", 24);
  EXPECT_NE(load_error(w.bytes()).find("general.alignment"), std::string::npos);
}

// Random byte flips in the header and directory: any outcome but a crash is fine.
TEST(gguf_corrupt, random_flips_never_crash) {
  const auto full = small_writer().bytes();
  std::mt19937 rng(11);
  std::uniform_int_distribution<std::size_t> where(0, 1200);
  std::uniform_int_distribution<int> value(0, 255);
  int loaded = 0;
  for (int i = 0; i < 3000; ++i) {
    auto bytes = full;
    for (int k = 0; k < 1 + i % 4; ++k) bytes[where(rng) % bytes.size()] = static_cast<std::byte>(value(rng));
    loaded += load_error(std::move(bytes)).empty();
  }
  SUCCEED() << loaded << " of 3000 mutated files still loaded";
}

}  // namespace
}  // namespace pagedserve
