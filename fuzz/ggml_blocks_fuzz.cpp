// ggml's block formats as a model file hands them over: arbitrary bytes decoded as every block type
// (NaN and infinite fp16 scales included; UBSan catches an out-of-range shift or conversion, ASan a
// read past the blocks), then each decoding's finite values quantized back and decoded again. The
// second decoding must be finite wherever the first was: the encoders clamp their scales to fp16's
// range, so a representable input never turns into inf or NaN.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "model/ggml_blocks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pagedserve;
  for (dtype t : {dtype::q4_0, dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q8_0, dtype::q2_k, dtype::q3_k,
                  dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_nl, dtype::iq4_xs}) {
    const block_layout l = block_layout_of(t);
    const std::size_t n_blocks = size / static_cast<std::size_t>(l.bytes);
    if (n_blocks == 0) continue;
    // The blocks copied out, so ASan sees exactly their extent (a decoder reading past them traps).
    const std::vector<std::byte> blocks(reinterpret_cast<const std::byte*>(data),
                                        reinterpret_cast<const std::byte*>(data) + n_blocks * l.bytes);
    std::vector<float> values(n_blocks * static_cast<std::size_t>(l.elements));
    dequantize_blocks(t, values.data(), blocks.data(), values.size());
    for (float& v : values)
      if (!std::isfinite(v)) v = 0.0f;
    const std::vector<std::byte> again = quantize_blocks(t, values);
    if (again.size() != blocks.size()) std::abort();
    std::vector<float> decoded(values.size());
    dequantize_blocks(t, decoded.data(), again.data(), decoded.size());
    for (float v : decoded)
      if (!std::isfinite(v)) std::abort();
  }
  return 0;
}
