// A whole GGUF file: header, metadata, tensor directory, data. The reader promises that every count,
// length and offset is checked against the file, so the fuzzer reads every metadata array through
// the typed getters and every tensor byte it is handed (ASan catches any read past the input), then
// builds the embedded tokenizer from the metadata and runs it, as serving a GGUF model does.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "fuzz/tokenizer_exercise.hpp"
#include "model/gguf.hpp"
#include "model/gguf_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pagedserve;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  const auto file = gguf_file::parse(bytes, nullptr, "fuzz.gguf");
  if (!file) return 0;
  for (const auto& [key, value] : file->metadata()) {
    (void)file->get_string(key);
    (void)file->get_uint(key);
    (void)file->get_float(key);
    (void)file->get_bool(key);
    (void)file->get_strings(key);
    (void)file->get_floats(key);
    (void)file->get_ints(key);
  }
  unsigned sum = 0;
  for (const auto& t : file->tensors())
    for (std::uint64_t i = 0; t.n_bytes && i < *t.n_bytes; ++i) sum += static_cast<unsigned>(t.data[i]);
  volatile unsigned sink = sum;  // keeps the reads
  (void)sink;
  if (auto tok = gguf_tokenizer_from(*file)) fuzz::tokenizer_exercise(**tok, "Hello world, 123 éü!", true);
  return 0;
}
