#include "pagedserve/kv_cache.hpp"

#include <algorithm>

#include "pagedserve/check.hpp"

namespace pagedserve {

kv_cache::kv_cache(int n_layers, int n_blocks, int block_size, int kv_dim)
    : n_layers_(n_layers),
      n_blocks_(n_blocks),
      block_size_(block_size),
      kv_dim_(kv_dim),
      block_stride_(2 * static_cast<std::size_t>(block_size) * kv_dim),
      layer_stride_(block_stride_ * n_blocks),
      n_floats_(layer_stride_ * n_layers),
      data_(new float[n_floats_]()) {}

kernels::paged_kv_layer kv_cache::layer(int l) const {
  float* base = data_.get() + l * layer_stride_;
  return {base, base + static_cast<std::size_t>(block_size_) * kv_dim_, block_stride_, block_size_, kv_dim_};
}

float* kv_cache::key_at(int l, int slot) const {
  return data_.get() + l * layer_stride_ + (slot / block_size_) * block_stride_ +
         static_cast<std::size_t>(slot % block_size_) * kv_dim_;
}

float* kv_cache::value_at(int l, int slot) const {
  return key_at(l, slot) + static_cast<std::size_t>(block_size_) * kv_dim_;
}

void kv_cache::copy_block(int from, int to) {
  ps_check(from >= 0 && from < n_blocks_ && to >= 0 && to < n_blocks_ && from != to, "copy_block: bad block ids");
  for (int l = 0; l < n_layers_; ++l) {
    const float* src = data_.get() + l * layer_stride_ + from * block_stride_;
    std::copy(src, src + block_stride_, data_.get() + l * layer_stride_ + to * block_stride_);
  }
}

}  // namespace pagedserve
