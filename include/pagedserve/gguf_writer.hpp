#pragma once
// Builds a GGUF (version 3) file in memory: metadata key/values, then tensors converted from fp32
// to F32, F16, BF16, Q8_0 or Q4_0. Tests write small random-weight models and embedded tokenizers
// with it; the layout is the one gguf.hpp documents, tensors aligned to general.alignment (32).
#include <cstdint>
#include <expected>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pagedserve/gguf.hpp"

namespace pagedserve {

class gguf_writer {
 public:
  void add_u32(std::string_view key, std::uint32_t v);
  void add_i32(std::string_view key, std::int32_t v);
  void add_f32(std::string_view key, float v);
  void add_bool(std::string_view key, bool v);
  void add_string(std::string_view key, std::string_view v);
  void add_strings(std::string_view key, std::span<const std::string> v);
  void add_f32s(std::string_view key, std::span<const float> v);
  void add_i32s(std::string_view key, std::span<const std::int32_t> v);
  // Any value, already encoded after its u32 type (corrupt-file tests).
  void add_raw_value(std::string_view key, std::uint32_t type, std::span<const std::byte> encoded);

  // `values` (n = product of ne) stored as `type`; ne is fastest-first, so a [rows, cols] matrix
  // is {cols, rows}. Q8_0/Q4_0 need ne[0] to be a multiple of 32.
  void add_tensor(std::string_view name, std::vector<std::uint64_t> ne, gguf_tensor_type type,
                  std::span<const float> values);
  // Bytes stored as given under any type number (tests of unknown types and lying sizes).
  void add_tensor_raw(std::string_view name, std::vector<std::uint64_t> ne, std::uint32_t type,
                      std::vector<std::byte> bytes);

  std::vector<std::byte> bytes() const;  // the whole file
  std::expected<void, std::string> write(const std::filesystem::path& path) const;

 private:
  struct tensor {
    std::string name;
    std::vector<std::uint64_t> ne;
    std::uint32_t type;
    std::vector<std::byte> data;
  };
  std::vector<std::byte> kv_;  // encoded key/value records
  std::uint64_t n_kv_ = 0;
  std::vector<tensor> tensors_;
};

}  // namespace pagedserve
