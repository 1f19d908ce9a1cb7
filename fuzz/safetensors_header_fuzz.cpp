// A whole .safetensors file: length prefix, JSON header, data. The parser promises that every
// tensor it hands out lies inside the file, so the fuzzer reads every byte of every tensor: ASan
// then catches any offset the checks let through.
#include <cstddef>
#include <cstdint>
#include <span>

#include "model/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  const auto header = pagedserve::safetensors_parse(bytes);
  if (!header) return 0;
  unsigned sum = 0;
  for (const auto& t : header->tensors)
    for (std::size_t i = 0; i < t.n_bytes; ++i) sum += static_cast<unsigned>(t.data[i]);
  volatile unsigned sink = sum;  // keeps the reads
  (void)sink;
  return 0;
}
