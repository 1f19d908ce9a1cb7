#pragma once
// The KV-cache memory: one preallocated pool of fixed-size blocks for every layer. Which sequence
// owns which block is decided elsewhere (block_pool / kv_allocator); this class only holds the floats.
// Layout: [layer][block][k|v][slot in block][kv_dim], so a layer's blocks are contiguous.
#include <cstddef>
#include <memory>

#include "pagedserve/kernels.hpp"

namespace pagedserve {

class kv_cache {
 public:
  kv_cache(int n_layers, int n_blocks, int block_size, int kv_dim);

  kernels::paged_kv_layer layer(int l) const;
  // Where token slot `slot` (block * block_size + offset) of layer l keeps its key; value follows after
  // block_size * kv_dim floats.
  float* key_at(int layer, int slot) const;
  float* value_at(int layer, int slot) const;
  // Copies block `from`'s keys and values into block `to`, in every layer (copy on write).
  void copy_block(int from, int to);

  int n_blocks() const { return n_blocks_; }
  int block_size() const { return block_size_; }
  std::size_t bytes() const { return n_floats_ * sizeof(float); }

 private:
  int n_layers_, n_blocks_, block_size_, kv_dim_;
  std::size_t block_stride_;  // floats per block of one layer (K and V)
  std::size_t layer_stride_;  // floats per layer
  std::size_t n_floats_;
  std::unique_ptr<float[]> data_;
};

}  // namespace pagedserve
