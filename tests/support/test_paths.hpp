#pragma once
// Where tests find their reference data and the built server binary. The data the licences let the
// repository carry is in tests/data; the Llama-licensed tokenizers and goldens only in ../shared.
#include <filesystem>
#include <string>
#include <string_view>

namespace pagedserve::test {

// ../shared beside the clone, or $PAGEDSERVE_SHARED_DIR when set (=/nonexistent runs the tests as a
// clone without it); empty path when it is absent.
std::filesystem::path shared_dir();
// tests/data/<relative>, else shared_dir()/<relative> (same layout), else empty when in neither.
std::filesystem::path data_file(std::string_view relative);
// data_file("models/<name>"): stories260K.bin, tok512.bin, tokenizer.bin.
std::filesystem::path model_file(std::string_view name);
// data_file("models/tokenizers/<name>"): a Hugging Face tokenizer directory (qwen3, llama3, llama2).
std::filesystem::path tokenizer_dir(std::string_view name);
// The golden ids of one Hugging Face tokenizer: tests/data/golden/tokenizers_<name>.json, else the
// combined golden/tokenizers.json of ../shared (same format, every tokenizer).
std::filesystem::path tokenizer_golden(std::string_view name);
std::filesystem::path server_binary();

}  // namespace pagedserve::test

// Skips the current test, saying why, when a data file is in neither tests/data nor ../shared.
#define PAGEDSERVE_REQUIRE_DATA(path)                                                                  \
  do {                                                                                                 \
    if ((path).empty())                                                                                \
      GTEST_SKIP() << "test data absent: skipping (needs " #path                                       \
                      "; the Llama-licensed tokenizers and goldens are only in ../shared)";            \
  } while (0)
