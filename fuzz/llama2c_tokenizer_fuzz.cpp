// The llama2.c tokenizers of ../shared/models (tok512.bin, and llama2.c's 32000-token tokenizer.bin)
// on arbitrary bytes; see tokenizer_exercise.hpp for what is checked.
#include <cstddef>
#include <cstdint>
#include <utility>

#include "fuzz/tokenizer_exercise.hpp"

namespace {

pagedserve::fuzz::tokenizer_list tokenizers;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::filesystem::path models = PAGEDSERVE_SHARED_DIR "/models";
  for (const auto& [file, n_vocab] : {std::pair{"tok512.bin", 512}, std::pair{"tokenizer.bin", 32000}})
    pagedserve::fuzz::tokenizer_list_add(tokenizers, pagedserve::llama2c_tokenizer_load(models / file, n_vocab), file);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pagedserve::fuzz::tokenizer_fuzz_input(tokenizers, data, size);
  return 0;
}
