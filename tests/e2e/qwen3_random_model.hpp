#pragma once
// A random-weight Qwen3-shaped checkpoint folder with the real Qwen3 tokenizer and chat template
// (tests/data/models/tokenizers/qwen3), for end-to-end tests of what the template does: tools,
// tool messages, <think>. Tiny layers, Qwen3's full vocabulary (the tokenizer's ids must fit).
#include <filesystem>
#include <string>

#include "model/hf_test_model.hpp"
#include "support/test_paths.hpp"

namespace pagedserve::e2e {

// The folder, written once per process and removed at its exit; empty when the Qwen3 tokenizer is absent.
inline std::filesystem::path qwen3_random_model() {
  struct written {
    std::filesystem::path dir;
    ~written() {
      std::error_code ec;
      if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
  };
  static const written model{[] {
    const auto tokenizer = test::tokenizer_dir("qwen3");
    if (tokenizer.empty()) return std::filesystem::path();
    test::arch_spec s = test::make_spec("qwen3_tools", "Qwen3ForCausalLM", 32, 48, 2, 4, 2, 16);
    s.qk_norm = true;
    s.tied = true;
    s.theta = 1e6;
    s.vocab = 151936;
    s.max_pos = 4096;
    const auto out = test::temp_dir("qwen3_tools");
    test::write_spec_folder(out, s, test::spec_random_tensors(s, dtype::bf16, 21), dtype::bf16);
    for (const char* file : {"tokenizer.json", "tokenizer_config.json"})
      std::filesystem::copy_file(tokenizer / file, out / file, std::filesystem::copy_options::overwrite_existing);
    return out;
  }()};
  return model.dir;
}

}  // namespace pagedserve::e2e
