// Writes safetensors files (converter, tests, benchmark models), one tensor in memory at a time.
#include <cstdio>
#include <fstream>
#include <numeric>

#include "pagedserve/check.hpp"
#include "model/safetensors.hpp"

namespace pagedserve {
namespace {

std::string_view header_dtype(dtype t) {
  switch (t) {
    case dtype::f32: return "F32";
    case dtype::bf16: return "BF16";
    case dtype::f16: return "F16";
    case dtype::i8: return "I8";
    default: break;
  }
  ps_check(false, "safetensors has no ggml block formats (GGUF only)");
  return {};
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::size_t entry_bytes(const safetensors_entry& e) {
  std::size_t n = dtype_size(e.type);
  for (std::int64_t d : e.shape) n *= static_cast<std::size_t>(d);
  return n;
}

}  // namespace

safetensors_entry safetensors_entry_from_f32(std::string name, std::vector<std::int64_t> shape, const float* src,
                                             dtype type) {
  safetensors_entry e{std::move(name), type, std::move(shape), {}};
  const std::size_t n = std::accumulate(e.shape.begin(), e.shape.end(), std::size_t{1},
                                        [](std::size_t a, std::int64_t d) { return a * static_cast<std::size_t>(d); });
  e.fill = [src, n, type](std::span<std::byte> out) {
    if (type == dtype::f32) {
      std::copy_n(reinterpret_cast<const std::byte*>(src), n * sizeof(float), out.data());
      return;
    }
    auto* dst = reinterpret_cast<std::uint16_t*>(out.data());
    for (std::size_t i = 0; i < n; ++i) dst[i] = type == dtype::bf16 ? f32_to_bf16(src[i]) : f32_to_f16(src[i]);
  };
  return e;
}

std::expected<void, std::string> safetensors_write(const std::filesystem::path& path,
                                                   std::span<const safetensors_entry> entries,
                                                   const std::map<std::string, std::string>& metadata) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      header += (first ? "" : ",") + json_string(k) + ":" + json_string(v);
      first = false;
    }
    header += "},";
  }
  std::size_t offset = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    header += (i ? "," : "") + json_string(e.name) + ":{\"dtype\":\"" + std::string(header_dtype(e.type)) + "\",\"shape\":[";
    for (std::size_t d = 0; d < e.shape.size(); ++d) header += (d ? "," : "") + std::to_string(e.shape[d]);
    const std::size_t n = entry_bytes(e);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + n) + "]}";
    offset += n;
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';  // tensors start 8-byte aligned

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return std::unexpected(path.string() + ": cannot create");
  const std::uint64_t header_len = header.size();
  out.write(reinterpret_cast<const char*>(&header_len), 8);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  std::vector<std::byte> buffer;
  for (const auto& e : entries) {
    buffer.assign(entry_bytes(e), std::byte{0});
    if (e.fill) e.fill(buffer);
    out.write(reinterpret_cast<const char*>(buffer.data()), static_cast<std::streamsize>(buffer.size()));
  }
  out.close();
  if (!out) return std::unexpected(path.string() + ": write failed");
  return {};
}

}  // namespace pagedserve
