// Encodes GGUF v3: little-endian header, metadata records, tensor directory, padding, aligned data.
#include "pagedserve/gguf_writer.hpp"

#include <cstring>
#include <fstream>

#include "pagedserve/ggml_blocks.hpp"
#include "pagedserve/weight.hpp"

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

void gguf_writer::add_tensor(std::string_view name, std::vector<std::uint64_t> ne, gguf_tensor_type type,
                             std::span<const float> values) {
  std::vector<std::byte> data;
  switch (type) {
    case gguf_tensor_type::f32:
      data.resize(values.size() * 4);
      if (!values.empty()) std::memcpy(data.data(), values.data(), data.size());
      break;
    case gguf_tensor_type::f16: data = encode_16(values, f32_to_f16); break;
    case gguf_tensor_type::bf16: data = encode_16(values, f32_to_bf16); break;
    case gguf_tensor_type::q8_0:
    case gguf_tensor_type::q4_0: data = quantize_blocks(*dtype_of_ggml_type(static_cast<std::uint32_t>(type)), values); break;
  }
  add_tensor_raw(name, std::move(ne), static_cast<std::uint32_t>(type), std::move(data));
}

void gguf_writer::add_tensor_raw(std::string_view name, std::vector<std::uint64_t> ne, std::uint32_t type,
                                 std::vector<std::byte> bytes) {
  tensors_.push_back({std::string(name), std::move(ne), type, std::move(bytes)});
}

std::vector<std::byte> gguf_writer::bytes() const {
  std::vector<std::byte> out;
  out.insert(out.end(), {std::byte{'G'}, std::byte{'G'}, std::byte{'U'}, std::byte{'F'}});
  put<std::uint32_t>(out, 3);
  put<std::uint64_t>(out, tensors_.size());
  put<std::uint64_t>(out, n_kv_);
  out.insert(out.end(), kv_.begin(), kv_.end());
  std::uint64_t offset = 0;
  for (const tensor& t : tensors_) {
    put_string(out, t.name);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(t.ne.size()));
    for (const std::uint64_t d : t.ne) put(out, d);
    put(out, t.type);
    put(out, offset);
    offset += (t.data.size() + alignment - 1) / alignment * alignment;
  }
  out.resize((out.size() + alignment - 1) / alignment * alignment);
  for (const tensor& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    out.resize((out.size() + alignment - 1) / alignment * alignment);
  }
  return out;
}

std::expected<void, std::string> gguf_writer::write(const std::filesystem::path& path) const {
  const std::vector<std::byte> b = bytes();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!out) return std::unexpected(path.string() + ": cannot write");
  return {};
}

}  // namespace pagedserve
