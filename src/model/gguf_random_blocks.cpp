// Random valid ggml blocks for synthetic models (gguf_writer::add_tensor_random_blocks): the quants and
// 6/8-bit sub-block scales are random bytes, and each fp16 super-scale is fixed so the weights come out
// around 0.02 standard deviation, centred, as a trained model's are (random fp16 bytes would give
// infinities and NaNs, and weights of 1e4 would overflow the activations within a few layers).
#include <tbb/parallel_for.h>

#include <cstring>

#include "model/ggml_blocks.hpp"
#include "model/gguf_writer.hpp"

namespace pagedserve {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct super_scales {
  int d_at = 0;      // byte offset of d in the block
  float d = 0;
  int min_at = -1;   // byte offset of dmin (K-quants) or m (q4_1, q5_1); -1: none
  float min = 0;     // its value: chosen so the block's mean weight is about 0
};

// For uniform random quants: d times the spread of (sub-scale x quant) is about 0.02.
super_scales scales_of(dtype t) {
  switch (t) {
    case dtype::q4_0: return {0, 0.0045f};                  // (q - 8), std 4.6
    case dtype::q4_1: return {0, 0.0045f, 2, -0.034f};      // d q + m, q in [0, 15]
    case dtype::q5_0: return {0, 0.0022f};                  // (q - 16), std 9.2
    case dtype::q5_1: return {0, 0.0022f, 2, -0.034f};
    case dtype::q8_0: return {0, 0.00027f};                 // int8, std 74
    case dtype::q2_k: return {80, 0.0026f, 82, 0.0039f};    // d sc q - dmin m, sc and m 4-bit, q 2-bit
    case dtype::q3_k: return {108, 0.00048f};               // d (sc - 32) q, q in [-4, 3]
    case dtype::q4_k: return {0, 0.00014f, 2, 0.00105f};    // 6-bit sc and m, q 4-bit
    case dtype::q5_k: return {0, 0.00007f, 2, 0.00108f};    // q 5-bit
    case dtype::q6_k: return {208, 0.000015f};              // int8 sc, (q - 32)
    case dtype::iq4_nl: return {0, 0.00028f};               // table values, std about 70
    case dtype::iq4_xs: return {0, 0.000016f};              // (ls - 32) x table
    default: return {};
  }
}

void put_f16(std::byte* at, float v) {
  const std::uint16_t h = f32_to_f16(v);
  std::memcpy(at, &h, 2);
}

}  // namespace

void random_blocks_fill(dtype type, std::span<std::byte> out, std::uint64_t seed, std::uint64_t first_block) {
  const std::size_t block_bytes = static_cast<std::size_t>(block_layout_of(type).bytes);
  const super_scales s = scales_of(type);
  const std::size_t n_blocks = out.size() / block_bytes;
  tbb::parallel_for(std::size_t{0}, n_blocks, std::size_t{4096}, [&](std::size_t b0) {
    const std::size_t b_end = std::min(n_blocks, b0 + 4096);
    for (std::size_t b = b0; b < b_end; ++b) {
      std::byte* block = out.data() + b * block_bytes;
      std::uint64_t state = seed * 0x2545f4914f6cdd1dull ^ (first_block + b);
      for (std::size_t i = 0; i < block_bytes; i += 8) {
        const std::uint64_t r = splitmix64(state);
        std::memcpy(block + i, &r, std::min<std::size_t>(8, block_bytes - i));
      }
      put_f16(block + s.d_at, s.d);
      if (s.min_at >= 0) put_f16(block + s.min_at, s.min);
    }
  });
}

}  // namespace pagedserve
