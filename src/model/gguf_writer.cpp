// Encodes GGUF v3: little-endian header, metadata records, tensor directory, padding, aligned data.
#include "model/gguf_writer.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>

#include "pagedserve/check.hpp"
#include "model/ggml_blocks.hpp"
#include "model/gguf_split.hpp"

namespace pagedserve {
namespace {

constexpr std::uint64_t alignment = 32;  // GGUF's default; no general.alignment key is written

template <class T>
void put(std::vector<std::byte>& out, T v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

void put_string(std::vector<std::byte>& out, std::string_view s) {
  put<std::uint64_t>(out, s.size());
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}

std::uint64_t padded(std::uint64_t n) { return (n + alignment - 1) / alignment * alignment; }

template <class T>
std::vector<std::byte> encode_16(std::span<const float> values, T convert) {
  std::vector<std::byte> out;
  out.reserve(values.size() * 2);
  for (const float v : values) put<std::uint16_t>(out, convert(v));
  return out;
}

}  // namespace

void gguf_writer::add_raw_value(std::string_view key, std::uint32_t type, std::span<const std::byte> encoded) {
  put_string(kv_, key);
  put<std::uint32_t>(kv_, type);
  kv_.insert(kv_.end(), encoded.begin(), encoded.end());
  ++n_kv_;
}

void gguf_writer::add_u32(std::string_view key, std::uint32_t v) {
  std::vector<std::byte> e;
  put(e, v);
  add_raw_value(key, static_cast<std::uint32_t>(gguf_value_type::u32), e);
}

void gguf_writer::add_i32(std::string_view key, std::int32_t v) {
  std::vector<std::byte> e;
  put(e, v);
  add_raw_value(key, static_cast<std::uint32_t>(gguf_value_type::i32), e);
}

void gguf_writer::add_f32(std::string_view key, float v) {
  std::vector<std::byte> e;
  put(e, v);
  add_raw_value(key, static_cast<std::uint32_t>(gguf_value_type::f32), e);
}

void gguf_writer::add_bool(std::string_view key, bool v) {
  std::vector<std::byte> e;
  put<std::uint8_t>(e, v ? 1 : 0);
  add_raw_value(key, static_cast<std::uint32_t>(gguf_value_type::boolean), e);
}

void gguf_writer::add_string(std::string_view key, std::string_view v) {
  std::vector<std::byte> e;
  put_string(e, v);
  add_raw_value(key, static_cast<std::uint32_t>(gguf_value_type::string), e);
}

void gguf_writer::add_strings(std::string_view key, std::span<const std::string> v) {
  std::vector<std::byte> e;
  put<std::uint32_t>(e, static_cast<std::uint32_t>(gguf_value_type::string));
  put<std::uint64_t>(e, v.size());
  for (const std::string& s : v) put_string(e, s);
  add_raw_value(key, static_cast<std::uint32_t>(gguf_value_type::array), e);
}

void gguf_writer::add_f32s(std::string_view key, std::span<const float> v) {
  std::vector<std::byte> e;
  put<std::uint32_t>(e, static_cast<std::uint32_t>(gguf_value_type::f32));
  put<std::uint64_t>(e, v.size());
  for (const float x : v) put(e, x);
  add_raw_value(key, static_cast<std::uint32_t>(gguf_value_type::array), e);
}

void gguf_writer::add_i32s(std::string_view key, std::span<const std::int32_t> v) {
  std::vector<std::byte> e;
  put<std::uint32_t>(e, static_cast<std::uint32_t>(gguf_value_type::i32));
  put<std::uint64_t>(e, v.size());
  for (const std::int32_t x : v) put(e, x);
  add_raw_value(key, static_cast<std::uint32_t>(gguf_value_type::array), e);
}

void gguf_writer::add_tensor(std::string_view name, std::vector<std::uint64_t> ne, dtype type,
                             std::span<const float> values) {
  std::vector<std::byte> data;
  switch (type) {
    case dtype::f32:
      data.resize(values.size() * 4);
      if (!values.empty()) std::memcpy(data.data(), values.data(), data.size());
      break;
    case dtype::f16: data = encode_16(values, f32_to_f16); break;
    case dtype::bf16: data = encode_16(values, f32_to_bf16); break;
    default:
      ps_check(is_block_quantized(type), "gguf_writer: i8 is not a GGUF type");
      data = quantize_blocks(type, values);
      break;
  }
  add_tensor_raw(name, std::move(ne), *ggml_type_of(type), std::move(data));
}

void gguf_writer::add_tensor(std::string_view name, std::vector<std::uint64_t> ne, gguf_tensor_type type,
                             std::span<const float> values) {
  add_tensor(name, std::move(ne), *dtype_of_ggml_type(static_cast<std::uint32_t>(type)), values);
}

void gguf_writer::add_tensor_random_blocks(std::string_view name, std::vector<std::uint64_t> ne, dtype type,
                                           std::uint64_t seed) {
  ps_check(is_block_quantized(type), "gguf_writer: random blocks need a block type");
  std::uint64_t n = 1;
  for (const std::uint64_t d : ne) n *= d;
  ps_check(!ne.empty() && ne[0] % block_layout_of(type).elements == 0, "gguf_writer: rows must be whole blocks");
  tensor t;
  t.name = std::string(name);
  t.ne = std::move(ne);
  t.type = *ggml_type_of(type);
  t.n_bytes = n / block_layout_of(type).elements * block_layout_of(type).bytes;
  t.random_seed = seed;
  t.random_type = type;
  tensors_.push_back(std::move(t));
}

void gguf_writer::add_tensor_raw(std::string_view name, std::vector<std::uint64_t> ne, std::uint32_t type,
                                 std::vector<std::byte> bytes) {
  tensor t;
  t.name = std::string(name);
  t.ne = std::move(ne);
  t.type = type;
  t.n_bytes = bytes.size();
  t.data = std::move(bytes);
  tensors_.push_back(std::move(t));
}

std::vector<std::byte> gguf_writer::header(std::span<const std::byte> kv, std::uint64_t n_kv, std::size_t first,
                                           std::size_t last) const {
  std::vector<std::byte> out;
  out.insert(out.end(), {std::byte{'G'}, std::byte{'G'}, std::byte{'U'}, std::byte{'F'}});
  put<std::uint32_t>(out, 3);
  put<std::uint64_t>(out, last - first);
  put<std::uint64_t>(out, n_kv);
  out.insert(out.end(), kv.begin(), kv.end());
  std::uint64_t offset = 0;
  for (std::size_t i = first; i < last; ++i) {
    const tensor& t = tensors_[i];
    put_string(out, t.name);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(t.ne.size()));
    for (const std::uint64_t d : t.ne) put(out, d);
    put(out, t.type);
    put(out, offset);
    offset += padded(t.n_bytes);
  }
  out.resize(padded(out.size()));
  return out;
}

void gguf_writer::tensor_slice(std::size_t i, std::uint64_t offset, std::span<std::byte> out) const {
  const tensor& t = tensors_[i];
  if (!t.random_seed) {
    std::memcpy(out.data(), t.data.data() + offset, out.size());
    return;
  }
  const std::uint64_t block_bytes = block_layout_of(t.random_type).bytes;
  random_blocks_fill(t.random_type, out, *t.random_seed, offset / block_bytes);
}

std::vector<std::byte> gguf_writer::bytes() const {
  std::vector<std::byte> out = header(kv_, n_kv_, 0, tensors_.size());
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const std::size_t at = out.size();
    out.resize(at + tensors_[i].n_bytes);
    tensor_slice(i, 0, std::span(out).subspan(at));
    out.resize(padded(out.size()));
  }
  return out;
}

std::expected<void, std::string> gguf_writer::write(const std::filesystem::path& path) const {
  return write_file(path, header(kv_, n_kv_, 0, tensors_.size()), 0, tensors_.size());
}

std::expected<std::filesystem::path, std::string> gguf_writer::write_splits(std::string_view prefix, int n_splits) const {
  ps_check(n_splits >= 1 && static_cast<std::size_t>(n_splits) <= std::max<std::size_t>(1, tensors_.size()),
           "gguf_writer: between one split and one split per tensor");
  for (int s = 0; s < n_splits; ++s) {
    gguf_writer keys;  // this split's own metadata: every key in the first
    if (s == 0) keys.kv_ = kv_, keys.n_kv_ = n_kv_;
    std::vector<std::byte> e;
    put<std::uint16_t>(e, static_cast<std::uint16_t>(s));
    keys.add_raw_value(gguf_split_no_key, static_cast<std::uint32_t>(gguf_value_type::u16), e);
    e.clear();
    put<std::uint16_t>(e, static_cast<std::uint16_t>(n_splits));
    keys.add_raw_value(gguf_split_count_key, static_cast<std::uint32_t>(gguf_value_type::u16), e);
    keys.add_i32(gguf_split_tensors_key, static_cast<std::int32_t>(tensors_.size()));
    const std::size_t first = tensors_.size() * s / n_splits, last = tensors_.size() * (s + 1) / n_splits;
    if (auto ok = write_file(gguf_split_path(prefix, s, n_splits), header(keys.kv_, keys.n_kv_, first, last), first, last); !ok)
      return std::unexpected(ok.error());
  }
  return gguf_split_path(prefix, 0, n_splits);
}

std::expected<void, std::string> gguf_writer::write_file(const std::filesystem::path& path,
                                                         std::span<const std::byte> head, std::size_t first,
                                                         std::size_t last) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  auto put_bytes = [&](std::span<const std::byte> b) {
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  };
  put_bytes(head);
  const std::vector<std::byte> zeros(alignment);
  std::vector<std::byte> slice;
  for (std::size_t i = first; i < last && out; ++i) {
    const tensor& t = tensors_[i];
    // Slices of whole blocks, about 64 MiB each, so a random tensor is never whole in memory.
    const std::uint64_t unit = t.random_seed ? block_layout_of(t.random_type).bytes : 1;
    const std::uint64_t step = (std::uint64_t{64} << 20) / unit * unit;
    for (std::uint64_t at = 0; at < t.n_bytes && out; at += step) {
      slice.resize(std::min(step, t.n_bytes - at));
      tensor_slice(i, at, slice);
      put_bytes(slice);
    }
    put_bytes(std::span(zeros).first(padded(t.n_bytes) - t.n_bytes));
  }
  if (!out) return std::unexpected(path.string() + ": cannot write");
  return {};
}

}  // namespace pagedserve
