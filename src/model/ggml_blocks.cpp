// ggml type numbers, and dequantize_blocks / quantize_blocks dispatching to the per-format decoders and
// encoders (ggml_legacy_blocks.cpp, ggml_k_blocks.cpp, ggml_k_quantizers.cpp, ggml_iq4_blocks.cpp).
#include "model/ggml_blocks.hpp"

#include <string>

#include "model/ggml_block_formats.hpp"
#include "pagedserve/check.hpp"

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
    case dtype::f8_e4m3: case dtype::f8_e5m2: return std::nullopt;  // KV cache types, never in a GGUF here
  }
  return std::nullopt;
}

std::optional<dtype> dtype_of_ggml_type(std::uint32_t type) {
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::q4_0, dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q8_0,
                  dtype::q2_k, dtype::q3_k, dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_nl, dtype::iq4_xs})
    if (ggml_type_of(t) == type) return t;
  return std::nullopt;
}

namespace {

// One block format's decoder and encoder (counts in blocks).
struct block_codec {
  void (*dequantize)(float* out, const std::byte* blocks, std::size_t n_blocks);
  void (*quantize)(std::byte* out, const float* x, std::size_t n_blocks);
};

block_codec codec_of(dtype t) {
  using namespace ggml_blocks;
  switch (t) {
    case dtype::q4_0: return {dequantize_q4_0, quantize_q4_0};
    case dtype::q4_1: return {dequantize_q4_1, quantize_q4_1};
    case dtype::q5_0: return {dequantize_q5_0, quantize_q5_0};
    case dtype::q5_1: return {dequantize_q5_1, quantize_q5_1};
    case dtype::q8_0: return {dequantize_q8_0, quantize_q8_0};
    case dtype::q2_k: return {dequantize_q2_k, quantize_q2_k};
    case dtype::q3_k: return {dequantize_q3_k, quantize_q3_k};
    case dtype::q4_k: return {dequantize_q4_k, quantize_q4_k};
    case dtype::q5_k: return {dequantize_q5_k, quantize_q5_k};
    case dtype::q6_k: return {dequantize_q6_k, quantize_q6_k};
    case dtype::iq4_nl: return {dequantize_iq4_nl, quantize_iq4_nl};
    case dtype::iq4_xs: return {dequantize_iq4_xs, quantize_iq4_xs};
    default: ps_check(false, "not a block-quantized dtype: " + std::string(dtype_name(t)));
  }
  return {};
}

std::size_t whole_blocks(dtype t, std::size_t n, const char* what) {
  const auto per_block = static_cast<std::size_t>(block_layout_of(t).elements);
  if (n % per_block != 0)
    ps_check(false, std::string(what) + ": " + std::to_string(n) + " weights of " + std::string(dtype_name(t)) +
                        " are not a whole number of blocks of " + std::to_string(per_block));
  return n / per_block;
}

}  // namespace

void dequantize_blocks(dtype t, float* out, const std::byte* blocks, std::size_t n) {
  const block_codec c = codec_of(t);
  c.dequantize(out, blocks, whole_blocks(t, n, "dequantize_blocks"));
}

std::vector<std::byte> quantize_blocks(dtype t, std::span<const float> x) {
  const block_codec c = codec_of(t);
  const std::size_t n_blocks = whole_blocks(t, x.size(), "quantize_blocks");
  std::vector<std::byte> out(n_blocks * static_cast<std::size_t>(block_layout_of(t).bytes));
  c.quantize(out.data(), x.data(), n_blocks);
  return out;
}

}  // namespace pagedserve
