// The Hugging Face tokenizer.json files of ../shared/models/tokenizers (Llama 2: SentencePiece-style
// with byte fallback; Llama 3 and Qwen3: byte-level BPE with regex pre-tokenizers and NFC) on
// arbitrary bytes; see tokenizer_exercise.hpp for what is checked.
#include <cstddef>
#include <cstdint>

#include "fuzz/tokenizer_exercise.hpp"
#include "tokenizer/hf_tokenizer.hpp"

namespace {

pagedserve::fuzz::tokenizer_list tokenizers;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::filesystem::path dir = PAGEDSERVE_SHARED_DIR "/models/tokenizers";
  for (const char* name : {"llama2", "llama3", "qwen3"})
    pagedserve::fuzz::tokenizer_list_add(tokenizers, pagedserve::hf_tokenizer_load(dir / name), name);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pagedserve::fuzz::tokenizer_fuzz_input(tokenizers, data, size);
  return 0;
}
