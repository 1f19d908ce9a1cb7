#include "pagedserve/kv_cache.hpp"

#include <cstring>

#include "pagedserve/check.hpp"

namespace pagedserve {

kv_cache::kv_cache(int n_layers, int n_blocks, int block_size, int kv_dim, dtype type)
    : n_layers_(n_layers),
      n_blocks_(n_blocks),
      block_size_(block_size),
      kv_dim_(kv_dim),
      type_(type),
      block_stride_(2 * static_cast<std::size_t>(block_size) * kv_dim),
      layer_stride_(block_stride_ * n_blocks),
      n_elements_(layer_stride_ * n_layers),
      data_(new std::byte[n_elements_ * dtype_size(type)]()) {
  ps_check(type == dtype::f32 || type == dtype::f16, "kv_cache: the K/V cache holds f32 or f16");
}

kernels::paged_kv_layer kv_cache::layer(int l) const {
  const std::size_t base = l * layer_stride_;
  return {element(base), element(base + static_cast<std::size_t>(block_size_) * kv_dim_), block_stride_, block_size_,
          kv_dim_, type_};
}

void kv_cache::store(const kernels::kernel_table& kt, int l, int slot, const float* key, const float* value) const {
  const std::size_t k_at = l * layer_stride_ + (slot / block_size_) * block_stride_ +
                           static_cast<std::size_t>(slot % block_size_) * kv_dim_;
  const std::size_t v_at = k_at + static_cast<std::size_t>(block_size_) * kv_dim_;
  if (type_ == dtype::f16) {
    kt.f32_to_f16_row(reinterpret_cast<std::uint16_t*>(element(k_at)), key, kv_dim_);
    kt.f32_to_f16_row(reinterpret_cast<std::uint16_t*>(element(v_at)), value, kv_dim_);
  } else {
    std::memcpy(element(k_at), key, kv_dim_ * sizeof(float));
    std::memcpy(element(v_at), value, kv_dim_ * sizeof(float));
  }
}

void kv_cache::copy_block(int from, int to) {
  ps_check(from >= 0 && from < n_blocks_ && to >= 0 && to < n_blocks_ && from != to, "copy_block: bad block ids");
  for (int l = 0; l < n_layers_; ++l)
    std::memcpy(element(l * layer_stride_ + to * block_stride_), element(l * layer_stride_ + from * block_stride_),
                block_stride_ * dtype_size(type_));
}

}  // namespace pagedserve
