#include "kv/kv_cache.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/mapped_file.hpp"
#include "pagedserve/check.hpp"

namespace pagedserve {

kv_cache::kv_cache(int n_layers, int n_blocks, int block_size, int n_kv_heads, int head_size, dtype type)
    : n_layers_(n_layers),
      n_blocks_(n_blocks),
      block_size_(block_size),
      n_kv_heads_(n_kv_heads),
      head_size_(head_size),
      type_(type),
      block_stride_(2 * static_cast<std::size_t>(block_size) * n_kv_heads * head_size),
      layer_stride_(block_stride_ * n_blocks),
      n_elements_(layer_stride_ * n_layers),
      data_(huge_page_buffer(n_elements_ * dtype_size(type))) {
  ps_check(std::ranges::find(kv_cache_types, type) != kv_cache_types.end(),
           "kv_cache: the K/V cache holds f32, f16, q8, fp8_e4m3 or fp8_e5m2");
  if (type == dtype::i8) scales_.reset(new float[n_scales()]());
}

namespace {

// One row of an fp8 cache: each element rounded to nearest even, saturated (pagedserve/fp8.hpp).
template <std::uint8_t (*encode)(float)>
void kv_encode_row_fp8(std::uint8_t* out, const float* x, int n) {
  for (int i = 0; i < n; ++i) out[i] = encode(x[i]);
}

}  // namespace

float kv_quantize_row_q8(std::int8_t* q, const float* x, int n) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  // nearbyint's value (round half to even, |x * inv| <= 127) without its call per element, which
  // does not inline at this file's baseline ISA: adding 1.5 * 2^23 leaves no fraction bits, so the
  // addition itself rounds to the nearest integer, ties to even: an add and a subtract per element.
  constexpr float round_magic = 12582912.0f;
  for (int i = 0; i < n; ++i) {
    const float scaled = x[i] * inv;
    q[i] = static_cast<std::int8_t>((scaled + round_magic) - round_magic);
  }
  return amax / 127.0f;
}

kernels::paged_kv_layer kv_cache::layer(int l) const {
  const std::size_t base = l * layer_stride_;
  kernels::paged_kv_layer at{element(base), element(base + block_stride_ / 2), block_stride_, block_size_, head_size_,
                             type_};
  if (type_ == dtype::i8) {
    at.k_scales = scales_.get() + base / head_size_;
    at.v_scales = at.k_scales + block_stride_ / 2 / head_size_;
  }
  return at;
}

void kv_cache::store(const kernels::kernel_table& kt, int l, int slot, const float* key, const float* value) const {
  const kernels::paged_kv_layer at = layer(l);
  const std::size_t block = (slot / block_size_) * block_stride_;
  for (int h = 0; h < n_kv_heads_; ++h) {  // each head's run in the block
    const std::size_t o = block + at.head_offset(h, slot % block_size_);
    const float* k = key + static_cast<std::size_t>(h) * head_size_;
    const float* v = value + static_cast<std::size_t>(h) * head_size_;
    if (type_ == dtype::i8) {
      at.k_scales[o / head_size_] = kv_quantize_row_q8(static_cast<std::int8_t*>(at.k_base) + o, k, head_size_);
      at.v_scales[o / head_size_] = kv_quantize_row_q8(static_cast<std::int8_t*>(at.v_base) + o, v, head_size_);
    } else if (type_ == dtype::f8_e4m3) {
      kv_encode_row_fp8<f32_to_fp8_e4m3>(static_cast<std::uint8_t*>(at.k_base) + o, k, head_size_);
      kv_encode_row_fp8<f32_to_fp8_e4m3>(static_cast<std::uint8_t*>(at.v_base) + o, v, head_size_);
    } else if (type_ == dtype::f8_e5m2) {
      kv_encode_row_fp8<f32_to_fp8_e5m2>(static_cast<std::uint8_t*>(at.k_base) + o, k, head_size_);
      kv_encode_row_fp8<f32_to_fp8_e5m2>(static_cast<std::uint8_t*>(at.v_base) + o, v, head_size_);
    } else if (type_ == dtype::f16) {
      kt.f32_to_f16_row(static_cast<std::uint16_t*>(at.k_base) + o, k, head_size_);
      kt.f32_to_f16_row(static_cast<std::uint16_t*>(at.v_base) + o, v, head_size_);
    } else {
      std::memcpy(static_cast<float*>(at.k_base) + o, k, head_size_ * sizeof(float));
      std::memcpy(static_cast<float*>(at.v_base) + o, v, head_size_ * sizeof(float));
    }
  }
}

void kv_cache::copy_block(int from, int to) {
  ps_check(from >= 0 && from < n_blocks_ && to >= 0 && to < n_blocks_ && from != to, "copy_block: bad block ids");
  for (int l = 0; l < n_layers_; ++l) {
    const std::size_t from_at = l * layer_stride_ + from * block_stride_, to_at = l * layer_stride_ + to * block_stride_;
    std::memcpy(element(to_at), element(from_at), block_stride_ * dtype_size(type_));
    if (scales_)
      std::copy_n(scales_.get() + from_at / head_size_, block_stride_ / head_size_, scales_.get() + to_at / head_size_);
  }
}

}  // namespace pagedserve
