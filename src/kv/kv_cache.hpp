#pragma once
// The KV-cache memory: one preallocated pool of fixed-size blocks for every layer. Which sequence
// owns which block is decided elsewhere (block_pool / kv_allocator); this class only holds the
// elements, fp32, fp16 (half the memory and half the bytes each decode step reads; see README),
// q8: int8 with one fp32 scale per token and kv head (a quarter plus 1/16, docs/roofline.md), or fp8
// (e4m3 or e5m2, a quarter, no scales: docs/kv-cache-dtypes.md).
// Layout: [layer][block][k|v][kv head][slot in block][head_size], so a layer's blocks are contiguous
// and so is each kv head's part of a block (kernels::paged_kv_layer).
#include <array>
#include <cstddef>
#include <memory>
#include <string_view>

#include "pagedserve/kernels.hpp"

namespace pagedserve {

// engine.kv_cache_dtype ("f32", "f16", "q8", "fp8" = "fp8_e4m3" or "fp8_e5m2", as config validation
// allows) as an element type: q8 is dtype::i8 with row scales (kernels::paged_kv_layer), the fp8 types
// store each element alone (scale 1.0, as vLLM without calibration: docs/kv-cache-dtypes.md).
inline dtype kv_cache_type(std::string_view name) {
  if (name == "fp8" || name == "fp8_e4m3") return dtype::f8_e4m3;
  if (name == "fp8_e5m2") return dtype::f8_e5m2;
  return name == "f16" ? dtype::f16 : name == "q8" ? dtype::i8 : dtype::f32;
}
inline std::string_view kv_cache_type_name(dtype t) {
  switch (t) {
    case dtype::f16: return "f16";
    case dtype::i8: return "q8";
    case dtype::f8_e4m3: return "fp8_e4m3";
    case dtype::f8_e5m2: return "fp8_e5m2";
    default: return "f32";
  }
}
inline constexpr std::array kv_cache_types{dtype::f32, dtype::f16, dtype::i8, dtype::f8_e4m3, dtype::f8_e5m2};

class kv_cache {
 public:
  // type: one of kv_cache_types (dtype::i8 is q8).
  kv_cache(int n_layers, int n_blocks, int block_size, int n_kv_heads, int head_size, dtype type = dtype::f32);

  kernels::paged_kv_layer layer(int l) const;
  // Stores one token's key and value (n_kv_heads * head_size floats each) in slot `slot` (block * block_size +
  // offset) of layer l, rounded to nearest even for fp16 by the table's conversion; for q8, each head's
  // row as round(x * 127 / max|x|) with scale max|x| / 127 (kv_quantize_row_q8); for fp8, each element
  // rounded to nearest even and saturated (pagedserve/fp8.hpp).
  void store(const kernels::kernel_table& kt, int layer, int slot, const float* key, const float* value) const;
  // Copies block `from`'s keys and values into block `to`, in every layer (copy on write).
  void copy_block(int from, int to);

  int n_blocks() const { return n_blocks_; }
  int block_size() const { return block_size_; }
  dtype type() const { return type_; }
  std::size_t bytes() const { return n_elements_ * dtype_size(type_) + n_scales() * sizeof(float); }
  // Bytes one token slot takes over all layers (keys and values, and q8's scales).
  static std::size_t bytes_per_token(int n_layers, int n_kv_heads, int head_size, dtype type) {
    const std::size_t row = head_size * dtype_size(type) + (type == dtype::i8 ? sizeof(float) : 0);
    return 2 * static_cast<std::size_t>(n_layers) * n_kv_heads * row;
  }

 private:
  std::byte* element(std::size_t i) const { return data_.get() + i * dtype_size(type_); }
  // q8: one scale per row of head_size elements, laid out as the rows are.
  std::size_t n_scales() const { return type_ == dtype::i8 ? n_elements_ / head_size_ : 0; }

  int n_layers_, n_blocks_, block_size_, n_kv_heads_, head_size_;
  dtype type_;
  std::size_t block_stride_;  // elements per block of one layer (K and V)
  std::size_t layer_stride_;  // elements per layer
  std::size_t n_elements_;
  std::shared_ptr<std::byte> data_;  // on huge pages: attention reads 4 KiB runs scattered over the pool
  std::unique_ptr<float[]> scales_;  // q8 only: [n_elements / head_size]
};

// One row of a q8 cache: q[n] = round(x * 127 / max|x|) (to nearest even), returns max|x| / 127
// (0, with q = 0, for a zero row).
float kv_quantize_row_q8(std::int8_t* q, const float* x, int n);

}  // namespace pagedserve
