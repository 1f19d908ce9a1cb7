#pragma once
// The KV-cache memory: one preallocated pool of fixed-size blocks for every layer. Which sequence
// owns which block is decided elsewhere (block_pool / kv_allocator); this class only holds the
// elements, fp32 or fp16 (half the memory and half the bytes each decode step reads; see README).
// Layout: [layer][block][k|v][kv head][slot in block][head_size], so a layer's blocks are contiguous
// and so is each kv head's part of a block (kernels::paged_kv_layer).
#include <cstddef>
#include <memory>
#include <string_view>

#include "pagedserve/kernels.hpp"

namespace pagedserve {

// engine.kv_cache_dtype ("f32" or "f16", as config validation allows) as an element type.
inline dtype kv_cache_type(std::string_view name) { return name == "f16" ? dtype::f16 : dtype::f32; }

class kv_cache {
 public:
  // type: dtype::f32 or dtype::f16.
  kv_cache(int n_layers, int n_blocks, int block_size, int n_kv_heads, int head_size, dtype type = dtype::f32);

  kernels::paged_kv_layer layer(int l) const;
  // Stores one token's key and value (n_kv_heads * head_size floats each) in slot `slot` (block * block_size +
  // offset) of layer l, rounded to nearest even for fp16 by the table's conversion.
  void store(const kernels::kernel_table& kt, int layer, int slot, const float* key, const float* value) const;
  // Copies block `from`'s keys and values into block `to`, in every layer (copy on write).
  void copy_block(int from, int to);

  int n_blocks() const { return n_blocks_; }
  int block_size() const { return block_size_; }
  dtype type() const { return type_; }
  std::size_t bytes() const { return n_elements_ * dtype_size(type_); }
  // Bytes one token slot takes over all layers (keys and values).
  static std::size_t bytes_per_token(int n_layers, int kv_dim, dtype type) {
    return 2 * static_cast<std::size_t>(n_layers) * kv_dim * dtype_size(type);
  }

 private:
  std::byte* element(std::size_t i) const { return data_.get() + i * dtype_size(type_); }

  int n_layers_, n_blocks_, block_size_, n_kv_heads_, head_size_;
  dtype type_;
  std::size_t block_stride_;  // elements per block of one layer (K and V)
  std::size_t layer_stride_;  // elements per layer
  std::size_t n_elements_;
  std::unique_ptr<std::byte[]> data_;
};

}  // namespace pagedserve
