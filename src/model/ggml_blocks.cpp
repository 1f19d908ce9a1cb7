// ggml type numbers, and the per-format decoders and encoders behind dequantize_blocks/quantize_blocks.
#include "pagedserve/ggml_blocks.hpp"

#include <string>

#include "pagedserve/check.hpp"
#include "pagedserve/gguf.hpp"

namespace pagedserve {

std::optional<std::uint32_t> ggml_type_of(dtype t) {
  switch (t) {
    case dtype::f32: return 0;
    case dtype::f16: return 1;
    case dtype::q4_0: return 2;
    case dtype::q4_1: return 3;
    case dtype::q5_0: return 6;
    case dtype::q5_1: return 7;
    case dtype::q8_0: return 8;
    case dtype::q2_k: return 10;
    case dtype::q3_k: return 11;
    case dtype::q4_k: return 12;
    case dtype::q5_k: return 13;
    case dtype::q6_k: return 14;
    case dtype::iq4_nl: return 20;
    case dtype::iq4_xs: return 23;
    case dtype::bf16: return 30;
    case dtype::i8: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<dtype> dtype_of_ggml_type(std::uint32_t type) {
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::q4_0, dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q8_0,
                  dtype::q2_k, dtype::q3_k, dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_nl, dtype::iq4_xs})
    if (ggml_type_of(t) == type) return t;
  return std::nullopt;
}

// TEMPORARY (helper A replaces): only q8_0 and q4_0 so far.
void dequantize_blocks(dtype t, float* out, const std::byte* blocks, std::size_t n) {
  switch (t) {
    case dtype::q8_0: gguf_dequantize_q8_0(out, blocks, n); return;
    case dtype::q4_0: gguf_dequantize_q4_0(out, blocks, n); return;
    default: ps_check(false, "dequantize_blocks: format not implemented yet: " + std::string(dtype_name(t)));
  }
}

std::vector<std::byte> quantize_blocks(dtype t, std::span<const float> x) {
  switch (t) {
    case dtype::q8_0: return gguf_quantize_q8_0(x);
    case dtype::q4_0: return gguf_quantize_q4_0(x);
    default: ps_check(false, "quantize_blocks: format not implemented yet: " + std::string(dtype_name(t)));
  }
  return {};
}

}  // namespace pagedserve
