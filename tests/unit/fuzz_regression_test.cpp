// Replays every input kept for the fuzz targets (fuzz/corpus/<target>/ seeds and
// fuzz/regressions/<target>/ crashes found and fixed) through the same target code, built here by
// g++ into the Release (and sanitizer) trees with its libFuzzer entry points renamed (see
// tests/CMakeLists.txt), so a fixed crash stays fixed without clang.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "support/test_paths.hpp"

extern "C" {
int ws_protocol_fuzz_one_input(const std::uint8_t*, std::size_t);
int openai_request_fuzz_one_input(const std::uint8_t*, std::size_t);
int http_pipeline_fuzz_one_input(const std::uint8_t*, std::size_t);
int ws_session_fuzz_one_input(const std::uint8_t*, std::size_t);
int safetensors_header_fuzz_one_input(const std::uint8_t*, std::size_t);
int hf_config_fuzz_one_input(const std::uint8_t*, std::size_t);
int chat_template_fuzz_one_input(const std::uint8_t*, std::size_t);
int gguf_metadata_fuzz_one_input(const std::uint8_t*, std::size_t);
int ggml_blocks_fuzz_one_input(const std::uint8_t*, std::size_t);
int grammar_fuzz_one_input(const std::uint8_t*, std::size_t);
int llama2c_tokenizer_fuzz_initialize(int*, char***);
int llama2c_tokenizer_fuzz_one_input(const std::uint8_t*, std::size_t);
int hf_tokenizer_fuzz_initialize(int*, char***);
int hf_tokenizer_fuzz_one_input(const std::uint8_t*, std::size_t);
}

namespace {

struct fuzz_target {
  const char* name;
  int (*one_input)(const std::uint8_t*, std::size_t);
  int (*initialize)(int*, char***);  // loads ../shared files, so null where none are needed
};

const fuzz_target targets[] = {
    {"ws_protocol_fuzz", ws_protocol_fuzz_one_input, nullptr},
    {"openai_request_fuzz", openai_request_fuzz_one_input, nullptr},
    {"http_pipeline_fuzz", http_pipeline_fuzz_one_input, nullptr},
    {"ws_session_fuzz", ws_session_fuzz_one_input, nullptr},
    {"safetensors_header_fuzz", safetensors_header_fuzz_one_input, nullptr},
    {"hf_config_fuzz", hf_config_fuzz_one_input, nullptr},
    {"chat_template_fuzz", chat_template_fuzz_one_input, nullptr},
    {"gguf_metadata_fuzz", gguf_metadata_fuzz_one_input, nullptr},
    {"ggml_blocks_fuzz", ggml_blocks_fuzz_one_input, nullptr},
    {"grammar_fuzz", grammar_fuzz_one_input, nullptr},
    {"llama2c_tokenizer_fuzz", llama2c_tokenizer_fuzz_one_input, llama2c_tokenizer_fuzz_initialize},
    {"hf_tokenizer_fuzz", hf_tokenizer_fuzz_one_input, hf_tokenizer_fuzz_initialize},
};

const std::filesystem::path fuzz_dir = PAGEDSERVE_FUZZ_DIR;

std::vector<std::filesystem::path> kept_inputs(const std::string& target) {
  std::vector<std::filesystem::path> files;
  for (const char* kind : {"corpus", "regressions"}) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(fuzz_dir / kind / target, ec))
      if (e.is_regular_file()) files.push_back(e.path());
  }
  return files;
}

class fuzz_replay : public testing::TestWithParam<fuzz_target> {};

TEST_P(fuzz_replay, every_seed_and_regression_runs_clean) {
  const fuzz_target& t = GetParam();
  if (t.initialize) {
    PAGEDSERVE_REQUIRE_DATA(pagedserve::test::shared_dir());
    static std::set<std::string> initialized;  // each target loads its tokenizers once per process
    if (initialized.insert(t.name).second) t.initialize(nullptr, nullptr);
  }
  const auto files = kept_inputs(t.name);
  ASSERT_FALSE(files.empty()) << "no seeds in fuzz/corpus/" << t.name;
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    std::ifstream in(f, std::ios::binary);
    const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
    EXPECT_EQ(t.one_input(bytes.data(), bytes.size()), 0);  // a crash or a sanitizer report ends the binary
  }
}

INSTANTIATE_TEST_SUITE_P(all, fuzz_replay, testing::ValuesIn(targets),
                         [](const auto& info) { return std::string(info.param.name); });

// A new fuzz target must be listed above, or its regressions would never be replayed.
TEST(fuzz_replay_list, names_every_target_in_fuzz) {
  std::set<std::string> listed, found;
  for (const auto& t : targets) listed.insert(t.name);
  for (const auto& e : std::filesystem::directory_iterator(fuzz_dir))
    if (e.path().filename().string().ends_with("_fuzz.cpp")) found.insert(e.path().stem().string());
  EXPECT_EQ(listed, found);
}

}  // namespace
